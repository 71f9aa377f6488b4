"""A Harbor dataset from its files: what loads, and every refusal's field and code."""

import pytest

from benchwright_shared.agentic import (
    AgenticDataset,
    DatasetLimits,
    NetworkMode,
    NetworkPolicy,
    TaskConfig,
    host_allowed,
    load_dataset,
    network_allowed,
)
from benchwright_shared.agentic.dataset import MAX_FILE_BYTES
from benchwright_shared.refusal import Refused

TOML = """\
version = "1.0"

[metadata]
difficulty = "easy"
unknown_to_us = ["kept", "as", "metadata"]

[verifier]
timeout_sec = 120.0

[agent]
timeout_sec = 300.0

[environment]
build_timeout_sec = 600.0
cpus = 2
memory = "2G"
allow_internet = false
some_future_field = true
"""


def task_files(name: str = "fix-bug", **overrides: str | bytes | None) -> dict[str, str | bytes]:
    files: dict[str, str | bytes | None] = {
        "task.toml": TOML,
        "instruction.md": "Fix the bug in /app/app.py.\n",
        "environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\nCOPY app.py /app/\n",
        "environment/app.py": "print('hi')\n",
        "tests/test.sh": "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
        "solution/solve.sh": "#!/bin/bash\ntrue\n",
    }
    files.update(overrides)
    return {f"{name}/{path}": content for path, content in files.items() if content is not None}


def refusal(files: dict[str, str | bytes], **kwargs: object) -> Refused:
    with pytest.raises(Refused) as caught:
        load_dataset(files, dataset=str(kwargs.pop("dataset", "starter")), **kwargs)  # type: ignore[arg-type]
    return caught.value


def field(path: str) -> str:
    return f'metadata.harbor_harness.files["{path}"]'


def test_a_dataset_loads_its_tasks_with_harbors_fields() -> None:
    files = {**task_files("fix-bug"), **task_files("write-file"), "README.md": "about"}
    files["docs/notes.txt"] = "not a task"
    loaded = load_dataset(files, dataset="starter")
    assert isinstance(loaded, AgenticDataset)
    assert list(loaded.tasks) == ["fix-bug", "write-file"]
    task = loaded.tasks["fix-bug"]
    assert task.instruction == "Fix the bug in /app/app.py.\n"
    config = task.config
    assert config.schema_version == "1.0"  # Harbor's legacy `version` spelling
    assert config.verifier.timeout_sec == 120.0 and config.agent.timeout_sec == 300.0
    assert config.environment.memory_mb == 2048 and config.environment.cpus == 2
    assert config.environment.network_mode is NetworkMode.NO_NETWORK  # from allow_internet
    assert config.metadata["unknown_to_us"] == ["kept", "as", "metadata"]
    assert task.has_solution and task.under("environment") == {
        "Dockerfile": b"FROM python:3.12-slim\nWORKDIR /app\nCOPY app.py /app/\n",
        "app.py": b"print('hi')\n",
    }
    assert task.field_for("tests/test.sh") == field("fix-bug/tests/test.sh")
    # Content-addressed: the same files give the same digest, any change another.
    again = load_dataset(files, dataset="starter")
    assert again.digest == loaded.digest
    changed = load_dataset({**files, "fix-bug/environment/app.py": "print('x')\n"}, dataset="s")
    assert changed.tasks["fix-bug"].digest != task.digest
    assert changed.tasks["write-file"].digest == loaded.tasks["write-file"].digest


def test_harbor_task_narrows_to_one_task_by_folder_or_package_name() -> None:
    named = TOML.replace('version = "1.0"', 'version = "1.0"\n[task]\nname = "bw/greet"\n', 1)
    files = {**task_files("fix-bug"), **task_files("greet-user", **{"task.toml": named})}
    assert list(load_dataset(files, dataset="d", only="fix-bug").tasks) == ["fix-bug"]
    assert list(load_dataset(files, dataset="d", only="bw/greet").tasks) == ["greet-user"]
    assert list(load_dataset(files, dataset="d", only="greet").tasks) == ["greet-user"]
    refused = refusal(files, only="nope")
    assert (refused.status, refused.field, refused.code) == (
        400,
        "metadata.harbor_task",
        "unknown_task",
    )
    assert "fix-bug" in (refused.detail or "")


def test_a_single_task_at_the_root_is_a_dataset_of_one() -> None:
    files = {path.removeprefix("fix-bug/"): c for path, c in task_files("fix-bug").items()}
    loaded = load_dataset(files, dataset="my-task")
    assert list(loaded.tasks) == ["my-task"]
    assert loaded.tasks["my-task"].field_for("task.toml") == field("task.toml")


def test_canary_lines_are_stripped_from_the_instruction_as_harbor_does() -> None:
    text = "<!-- BENCHMARK DATA canary GUID 1234 -->\n# harbor-canary xyz\n\nDo the thing.\n"
    loaded = load_dataset(task_files(**{"instruction.md": text}), dataset="d")
    assert loaded.tasks["fix-bug"].instruction == "Do the thing.\n"


@pytest.mark.parametrize(
    ("missing", "code"),
    [
        ("instruction.md", "missing_instruction"),
        ("task.toml", "missing_task_config"),
        ("tests/test.sh", "missing_tests"),
    ],
)
def test_a_task_missing_a_required_file_is_refused_naming_it(missing: str, code: str) -> None:
    refused = refusal(task_files(**{missing: None}))
    assert (refused.status, refused.code, refused.field) == (400, code, field(f"fix-bug/{missing}"))


def test_a_task_without_environment_or_image_is_refused() -> None:
    files = task_files(**{"environment/Dockerfile": None, "environment/app.py": None})
    refused = refusal(files)
    assert refused.code == "missing_environment"
    assert refused.field == field("fix-bug/environment/Dockerfile")
    with_image = TOML + 'docker_image = "ghcr.io/org/task:1"\n'
    files = task_files(**{"environment/Dockerfile": None, "environment/app.py": None})
    files["fix-bug/task.toml"] = with_image
    assert load_dataset(files, dataset="d").tasks["fix-bug"].config.environment.docker_image


@pytest.mark.parametrize(
    "path",
    [
        "../escape.txt",
        "fix-bug/../../etc/passwd",
        "/etc/passwd",
        "C:/Windows/win.ini",
        "fix-bug\\tests\\test.sh",
        "fix-bug/tests/\x00test.sh",
        "fix-bug//tests/x",
        "fix-bug/./tests/x",
        "fix-bug/tests/\x1b[31m",
        "",
    ],
)
def test_a_path_escaping_the_dataset_is_refused(path: str) -> None:
    refused = refusal({**task_files(), path: "x"})
    assert (refused.status, refused.code) == (400, "unsafe_path")
    assert refused.field == field(path[:200])


def test_a_path_that_is_both_a_file_and_a_folder_is_refused() -> None:
    refused = refusal({**task_files(), "fix-bug/tests": "a file where a folder is"})
    assert (refused.code, refused.field) == ("unsafe_path", field("fix-bug/tests"))


def test_a_huge_file_is_refused_before_it_is_copied_or_encoded() -> None:
    # 600 MB (zero pages, never touched): refused on its length alone.
    huge = bytes(600 * 1024 * 1024)
    refused = refusal({**task_files(), "fix-bug/environment/big.bin": huge})
    assert (refused.status, refused.code) == (413, "file_too_large")
    assert refused.field == field("fix-bug/environment/big.bin")
    del huge

    class Unencodable(str):
        def encode(self, *args: object, **kwargs: object) -> bytes:
            raise AssertionError("an oversized file was encoded")

    text = Unencodable("x" * (MAX_FILE_BYTES + 1))
    assert refusal({**task_files(), "fix-bug/big.txt": text}).code == "file_too_large"
    # Multi-byte text is measured in bytes once it is short enough to encode.
    wide = "é" * (MAX_FILE_BYTES // 2 + 1)
    assert refusal({**task_files(), "fix-bug/a.txt": wide}).code == "file_too_large"


def test_the_caps_on_total_size_file_count_and_task_count() -> None:
    many = {**task_files("a"), **task_files("b")}
    small = DatasetLimits(max_dataset_bytes=10_000, max_files=12, max_tasks=1)
    assert refusal(many, limits=small).code == "too_many_tasks"
    assert refusal(many, limits=small).status == 413
    roomy = DatasetLimits(max_dataset_bytes=100, max_tasks=5)
    refused = refusal(many, limits=roomy)
    assert (refused.code, refused.field) == ("dataset_too_large", "metadata.harbor_harness.files")
    refused = refusal(many, limits=DatasetLimits(max_files=5))
    assert (refused.status, refused.code) == (413, "too_many_files")


def test_bad_toml_and_a_config_that_does_not_fit_are_refused() -> None:
    refused = refusal(task_files(**{"task.toml": "[verifier\ntimeout_sec = 1"}))
    assert (refused.code, refused.field) == ("bad_toml", field("fix-bug/task.toml"))
    refused = refusal(task_files(**{"task.toml": '[verifier]\ntimeout_sec = "soon"\n'}))
    assert (refused.code, refused.field) == ("bad_task_config", field("fix-bug/task.toml"))
    assert "verifier.timeout_sec" in (refused.detail or "")
    refused = refusal(task_files(**{"task.toml": '[[steps]]\nname = "one"\n'}))
    assert (refused.status, refused.code) == (422, "multi_step_unsupported")
    refused = refusal(task_files(**{"task.toml": '[environment]\nos = "Windows"\n'}))
    assert (refused.status, refused.code) == (422, "unsupported_os")


def test_text_files_must_be_utf8() -> None:
    refused = refusal(task_files(**{"instruction.md": b"\xff\xfe bad"}))
    assert (refused.code, refused.field) == ("bad_encoding", field("fix-bug/instruction.md"))


def test_duplicate_task_names_and_bad_names_are_refused() -> None:
    refused = refusal({**task_files("Fix-Bug"), **task_files("fix-bug")})
    assert (refused.code, refused.field) == ("duplicate_task", field("fix-bug/task.toml"))
    named = TOML + '\n[task]\nname = "bw/same"\n'
    both = {
        **task_files("one", **{"task.toml": named}),
        **task_files("two", **{"task.toml": named}),
    }
    assert refusal(both).code == "duplicate_task"
    refused = refusal(task_files("-dash"))
    assert (refused.code, refused.field) == ("bad_task_name", field("-dash/task.toml"))
    refused = refusal(task_files(), dataset="../x")
    assert (refused.code, refused.field) == ("bad_dataset_name", "metadata.harbor_harness.dataset")


def test_a_dataset_with_no_task_is_refused() -> None:
    refused = refusal({"README.md": "nothing here", "docs/a.md": "nor here"})
    assert (refused.code, refused.field) == ("no_tasks", "metadata.harbor_harness.files")


def test_the_field_prefix_follows_where_the_dataset_came_from() -> None:
    with pytest.raises(Refused) as caught:
        load_dataset(
            task_files(**{"instruction.md": None}),
            dataset="d",
            where="subset.files_of",
        )
    assert caught.value.field == 'subset.files_of.files["fix-bug/instruction.md"]'


def test_network_is_the_task_mode_intersected_with_the_host_policy() -> None:
    assert network_allowed("public", True)
    assert not network_allowed("public", False)  # the account says no: never wider
    assert not network_allowed(NetworkMode.NO_NETWORK, True)
    assert network_allowed("allowlist", True) and not network_allowed("allowlist", False)
    allowlist = NetworkPolicy(
        network_mode=NetworkMode.ALLOWLIST,
        allowed_hosts=["pypi.org", "*.example.com", "10.0.0.0/8", "192.0.2.1"],
    )
    assert host_allowed(allowlist, "PyPI.org.", host_policy_allows=True)
    assert host_allowed(allowlist, "api.example.com", host_policy_allows=True)
    assert not host_allowed(allowlist, "example.com", host_policy_allows=True)
    assert host_allowed(allowlist, "10.1.2.3", host_policy_allows=True)
    assert host_allowed(allowlist, "192.0.2.1", host_policy_allows=True)
    assert not host_allowed(allowlist, "evil.org", host_policy_allows=True)
    assert not host_allowed(allowlist, "pypi.org", host_policy_allows=False)
    public = NetworkPolicy()
    assert host_allowed(public, "anything.org", host_policy_allows=True)
    assert not host_allowed(public, "anything.org", host_policy_allows=False)


def test_a_phase_overrides_the_environments_network_only_when_it_says_so() -> None:
    config = TaskConfig.model_validate(
        {
            "environment": {"network_mode": "no-network"},
            "verifier": {"network_mode": "allowlist", "allowed_hosts": ["pypi.org"]},
        }
    )
    assert config.network_policy("agent").network_mode is NetworkMode.NO_NETWORK
    verifier = config.network_policy("verifier")
    assert verifier.network_mode is NetworkMode.ALLOWLIST and verifier.allowed_hosts == ["pypi.org"]
    assert TaskConfig().network_policy("agent").network_mode is NetworkMode.PUBLIC
