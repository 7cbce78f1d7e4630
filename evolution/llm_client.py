"""An async chat client for any OpenAI-compatible endpoint (vLLM, SGLang, OpenAI, DeepSeek...), with bounded
retries, and the token/cost budget of the LLM mutations.

    LLMError                 an endpoint gave no usable answer
     ├── LLMTransportError   still failing after the retries: 429, 5xx, timeouts, refused connections
     └── LLMRequestError     the endpoint refused the request itself (400, 401, 404): retrying cannot help

The API key is taken from kernelbot's secrets registry (evaluators.secrets: moved there from the environment
variable the endpoint names when kernelbot starts), handed to the openai client and never logged, stored or
put into an error message; a `user:password@` of the endpoint's URL lives there too. Every message is sent
with the secrets' values masked (what is sent is what the store keeps). Retries back off exponentially with
full jitter; a server's Retry-After (or retry-after-ms) is honoured, up to a cap, so a rate-limited endpoint
is not hammered.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from evaluators import secrets
from evolution.types import TokenUsage

if TYPE_CHECKING:
    from openai import AsyncOpenAI


class LLMError(Exception):
    """An LLM endpoint gave no usable answer; the message names the model and what happened."""


class LLMTransportError(LLMError):
    """The endpoint kept failing (rate limits, server errors, timeouts, refused connections) past retries."""


class LLMRequestError(LLMError):
    """The endpoint rejected the request (bad request, authentication, unknown model): not retried."""


class EndpointLike(Protocol):
    """What the client needs of an endpoint config (evolution.config.LLMEndpoint satisfies it). Read-only
    members, so that a frozen dataclass satisfies it."""

    @property
    def model(self) -> str: ...
    @property
    def base_url(self) -> str: ...
    @property
    def api_key_env(self) -> str: ...
    @property
    def temperature(self) -> float: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def timeout_s(self) -> float: ...
    @property
    def max_retries(self) -> int: ...


@dataclass(frozen=True)
class RetryPolicy:
    base_delay_s: float = 1.0  # first backoff; doubles per attempt, full jitter
    max_delay_s: float = 60.0
    max_retry_after_s: float = 300.0  # a server asking for a longer pause than this is not waited for


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok) / 1e6


@dataclass(frozen=True)
class ChatAnswer:
    text: str
    model: str
    usage: TokenUsage
    attempts: int
    finish_reason: str = ""


class Budget:
    """Tokens and dollars the LLM mutations may spend in this process; None means unlimited.

    Several mutations may be in flight when the budget runs out, so it can be overshot by their answers;
    no request starts once it is spent."""

    def __init__(self, max_tokens: int | None = None, max_cost_usd: float | None = None) -> None:
        self.max_tokens = max_tokens
        self.max_cost_usd = max_cost_usd
        self.spent = TokenUsage()

    def exhausted(self) -> str | None:
        """Why no more requests may start, or None."""
        tokens = self.spent.prompt_tokens + self.spent.completion_tokens
        if self.max_tokens is not None and tokens >= self.max_tokens:
            return f"LLM token budget spent ({tokens} of {self.max_tokens} tokens)"
        if self.max_cost_usd is not None and self.spent.cost_usd >= self.max_cost_usd:
            return f"LLM cost budget spent (${self.spent.cost_usd:.4f} of ${self.max_cost_usd:.4f})"
        return None

    def charge(self, usage: TokenUsage) -> None:
        self.spent = self.spent + usage


Sleep = Callable[[float], Awaitable[None]]


class ChatClient:
    """One endpoint. `chat` retries transient failures per the endpoint's max_retries and the policy."""

    def __init__(
        self,
        endpoint: EndpointLike,
        *,
        price: Price | None = None,
        retry: RetryPolicy | None = None,
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.price = price or Price()
        self.retry = retry or RetryPolicy()
        self._sleep = sleep or asyncio.sleep
        self._rng = rng or random.Random()
        self._environ = environ  # None: the secrets registry (and the environment of a library caller)
        self._client: AsyncOpenAI | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _openai(self) -> Any:
        """The openai client of the running event loop (its connections belong to one loop)."""
        from openai import AsyncOpenAI

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            ep = self.endpoint
            # Local servers (vLLM, SGLang) need no key, but the client insists on one: any placeholder works.
            key = secrets.get(ep.api_key_env, self._environ) or "no-key"
            url = secrets.url_with_credentials(ep.base_url)
            self._client = AsyncOpenAI(base_url=url, api_key=key, timeout=ep.timeout_s, max_retries=0)
            self._loop = loop
        return self._client

    async def chat(self, messages: list[dict[str, str]]) -> ChatAnswer:
        import openai

        ep = self.endpoint
        # Masked here too, not only by the mutator: no caller can send a secret to the endpoint.
        messages = [{**m, "content": secrets.redact(m.get("content", ""))} for m in messages]
        attempts = 0
        while True:
            attempts += 1
            try:
                response = await self._openai().chat.completions.create(
                    model=ep.model, messages=messages, temperature=ep.temperature, max_tokens=ep.max_tokens
                )
                return self._answer(response, attempts)
            except (openai.RateLimitError, openai.InternalServerError) as exc:
                problem = f"HTTP {exc.status_code}"
                retry_after = _retry_after(exc.response.headers)
            except openai.APITimeoutError:
                problem = f"no answer within {ep.timeout_s:g} s"
                retry_after = None
            except openai.APIConnectionError as exc:
                problem = f"connection failed ({type(exc.__cause__ or exc).__name__})"
                retry_after = None
            except openai.APIStatusError as exc:
                if exc.status_code >= 500:
                    problem, retry_after = f"HTTP {exc.status_code}", _retry_after(exc.response.headers)
                else:
                    # Authentication errors may quote (part of) the key: never repeat their text.
                    detail = "" if exc.status_code in (401, 403) else f" {_short(exc.message)}"
                    raise LLMRequestError(
                        f"{ep.model} at {ep.base_url} rejected the request: HTTP {exc.status_code}{detail}"
                    ) from None
            except (
                openai.APIResponseValidationError,
                ValueError,
                TypeError,
                KeyError,
                AttributeError,
            ) as exc:
                # A proxy or a misconfigured server answering 200 with something else (HTML, broken JSON).
                problem, retry_after = f"an answer that is not a chat completion ({type(exc).__name__})", None
            if attempts > ep.max_retries:
                raise LLMTransportError(
                    f"{ep.model} at {ep.base_url}: {problem}, still failing after {attempts} attempt(s)"
                )
            delay = self._delay(attempts, retry_after)
            if delay is None:
                raise LLMTransportError(
                    f"{ep.model} at {ep.base_url}: {problem}; it asked to wait {retry_after:.0f} s, "
                    f"more than the {self.retry.max_retry_after_s:.0f} s cap"
                )
            await self._sleep(delay)

    def _delay(self, attempt: int, retry_after: float | None) -> float | None:
        backoff = min(self.retry.max_delay_s, self.retry.base_delay_s * 2 ** (attempt - 1))
        jittered = self._rng.uniform(0.0, backoff)
        if retry_after is None:
            return jittered
        if retry_after > self.retry.max_retry_after_s:
            return None
        return retry_after + self._rng.uniform(0.0, min(1.0, backoff) * 0.1)

    def _answer(self, response: Any, attempts: int) -> ChatAnswer:
        ep = self.endpoint
        choices = getattr(response, "choices", None) or []
        message = choices[0].message if choices else None
        text = getattr(message, "content", None) if message is not None else None
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        spent = TokenUsage(
            prompt_tokens, completion_tokens, self.price.cost(prompt_tokens, completion_tokens)
        )
        if not isinstance(text, str):
            raise LLMErrorWithUsage(f"{ep.model} returned no message text", spent)
        return ChatAnswer(
            text=text,
            model=ep.model,
            usage=spent,
            attempts=attempts,
            finish_reason=str(getattr(choices[0], "finish_reason", "") or ""),
        )

    async def check(self) -> None:
        """Make one cheap request, before a search spends anything on this endpoint: its models list (or,
        from a server without one, a one-token chat). Raises LLMRequestError when the endpoint refuses the
        key or does not serve the model, LLMTransportError when it cannot be reached; both name it."""
        import openai

        ep = self.endpoint
        where = f"{ep.model} at {ep.base_url}"
        try:
            try:
                served = [m.id async for m in self._openai().models.list()]
            except openai.NotFoundError:  # no models route (some proxies): ask for one token instead
                await self._openai().chat.completions.create(
                    model=ep.model, messages=[{"role": "user", "content": "ok"}], max_tokens=1
                )
                return
        except openai.APITimeoutError:
            raise LLMTransportError(f"{where}: no answer within {ep.timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            cause = type(exc.__cause__ or exc).__name__
            raise LLMTransportError(f"{where}: cannot connect ({cause}); is the server up?") from None
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403):  # never repeat the text: it may quote the key
                held = "is not set" if not secrets.get(ep.api_key_env, self._environ) else "was refused"
                raise LLMRequestError(
                    f"{where}: HTTP {exc.status_code}, the API key in ${ep.api_key_env} {held}"
                ) from None
            raise LLMRequestError(f"{where}: HTTP {exc.status_code} {_short(exc.message)}") from None
        if served and ep.model not in served:
            shown = ", ".join(served[:8]) + (", ..." if len(served) > 8 else "")
            raise LLMRequestError(f"{where}: the server does not serve model {ep.model!r} (it has {shown})")

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


class LLMErrorWithUsage(LLMError):
    """An answer came back (and was paid for) but held no text."""

    def __init__(self, message: str, usage: TokenUsage) -> None:
        super().__init__(message)
        self.usage = usage


async def check_endpoints(
    endpoints: tuple[EndpointLike, ...], environ: Mapping[str, str] | None = None
) -> None:
    """`ChatClient.check` for every endpoint, one after the other; the first problem is raised."""
    for endpoint in endpoints:
        client = ChatClient(endpoint, environ=environ)
        try:
            await client.check()
        finally:
            await client.close()


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a server asked us to wait: retry-after-ms, or Retry-After as seconds or an HTTP date."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
