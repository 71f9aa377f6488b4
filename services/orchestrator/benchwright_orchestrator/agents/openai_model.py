"""``AgentModel`` over an OpenAI-compatible ``/chat/completions`` (the run's proxy).

Retry policy, kept simple: a transport error, a 429 or a 5xx is tried again up to
``retries`` times, waiting ``backoff_s * 2**n`` (or the answer's ``Retry-After``,
capped at ``max_wait_s``); then it is ``ModelRefused("model_error")``. A 402 (the
proxy's cost ceiling) is ``ModelRefused("cost")`` at once, and any other 4xx is
``ModelRefused("model_error")`` at once: trying again would not change the answer.
The cost of a call is the proxy's stamp (``x-benchwright-call-cost-micros``).
"""

import asyncio
import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from benchwright_orchestrator.agents.ports import ModelRefused, ModelReply, ModelToolCall

__all__ = ["COST_HEADER", "ProxyAgentModel"]

COST_HEADER = "x-benchwright-call-cost-micros"
_RETRIED = frozenset({408, 409, 429, 500, 502, 503, 504})


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


class ProxyAgentModel:
    """One model behind an OpenAI-compatible endpoint, with tool calling."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        headers: Mapping[str, str] | None = None,
        *,
        timeout_s: float = 600.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        max_wait_s: float = 30.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_wait_s = max_wait_s
        self._headers = {"authorization": f"Bearer {api_key}", **(headers or {})}
        self._client = client or httpx.AsyncClient(timeout=timeout_s)
        self._owns_client = client is None
        self._ids = itertools.count(1)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def complete(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> ModelReply:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
            body["tool_choice"] = "auto"
        for tried in itertools.count():
            wait_s = min(self.backoff_s * 2**tried, self.max_wait_s)
            try:
                response = await self._client.post(self.url, json=body, headers=self._headers)
            except httpx.HTTPError as exc:
                if tried >= self.retries:
                    raise ModelRefused("model_error", f"{type(exc).__name__}: {exc}") from exc
                await asyncio.sleep(wait_s)
                continue
            if response.status_code == 402:
                raise ModelRefused("cost", response.text[:500])
            if response.status_code in _RETRIED and tried < self.retries:
                retry_after = response.headers.get("retry-after", "")
                if retry_after.replace(".", "", 1).isdigit():
                    wait_s = min(float(retry_after), self.max_wait_s)
                await asyncio.sleep(wait_s)
                continue
            if response.status_code >= 400:
                raise ModelRefused(
                    "model_error", f"HTTP {response.status_code}: {response.text[:500]}"
                )
            return self._reply(response)
        raise AssertionError("unreachable")  # pragma: no cover

    def _reply(self, response: httpx.Response) -> ModelReply:
        try:
            payload = response.json()
            choice = payload["choices"][0]
            message = choice.get("message") or {}
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ModelRefused("model_error", f"not a chat completion: {exc!r}") from exc
        calls = []
        for raw in message.get("tool_calls") or []:
            function = raw.get("function") or {}
            arguments = function.get("arguments")
            calls.append(
                ModelToolCall(
                    # A provider that leaves the id out still needs one to pair the result.
                    id=str(raw.get("id") or f"call_{next(self._ids)}"),
                    name=str(function.get("name") or ""),
                    arguments=(
                        arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments)
                        if isinstance(arguments, dict)
                        else ""
                    ),
                )
            )
        usage = payload.get("usage") or {}
        cost = response.headers.get(COST_HEADER)
        return ModelReply(
            text=message.get("content"),
            tool_calls=tuple(calls),
            input_tokens=_int(usage.get("prompt_tokens")),
            output_tokens=_int(usage.get("completion_tokens")),
            cost_micros=_int(cost) if cost is not None else None,
            finish_reason=choice.get("finish_reason"),
        )
