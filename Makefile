.PHONY: demo test venv lint

# Start the embedded platform and score the offline local model on GSM8K.
demo:
	scripts/demo.sh

# Everything the tests need, then the tests.
test:
	scripts/test.sh

venv:
	scripts/bootstrap.sh

lint:
	.venv/bin/ruff check shared services sdk runtime tests bench
	.venv/bin/lint-imports --no-cache
	.venv/bin/mypy
