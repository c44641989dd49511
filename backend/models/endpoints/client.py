"""Any OpenAI-compatible server as a model (vLLM, llama.cpp's server, Ollama, TGI, SGLang, hosted APIs).

Requests go through the official `openai` client (`AsyncOpenAI`), whose own retries (exponential
back-off, `Retry-After` honoured) cover 429, 5xx and timeouts; `max_concurrency` requests are in
flight at once. Every response is cached (`cache`) and priced (`spend`). The key is read from the
environment variable the registry names, when the client is made, and is never stored.

Faults that stop a run (`RunStopped`): nothing answers at the address after the retries, the key is
refused, the model is not served there, a spending limit. A fault of one request (the server refuses
that prompt) is that item's error and the run goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import openai

from backend.models.endpoints import spend
from backend.models.output import Completion, RunStopped
from backend.store import endpoint_cache as cache

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 3.0
CHARS_PER_TOKEN = 4  # the worst-case estimate of a prompt's tokens before it is sent


class EndpointDown(RunStopped):
    """The server did not answer (after the client's retries)."""


class ServerBroken(RunStopped):
    """The server answered, but not with a usable response (not JSON, cut short): no item gets that as its answer."""


class Unauthorised(RunStopped):
    """The server refused the key, or the key's variable is not set."""


class ModelMissing(RunStopped):
    """The server answers but does not serve the registered model."""


@dataclass(frozen=True)
class Settings:
    """What the registry says of an endpoint (a subset of registry.ModelSpec, so this layer needs no registry)."""

    name: str
    base_url: str
    model: str
    api_key_env: str = ""
    max_concurrency: int = 4
    timeout_s: float = 60.0
    max_retries: int = 3
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int | None = None
    price_in: float = 0.0
    price_out: float = 0.0
    daily_cap: float | None = None
    person_daily_cap: float | None = None
    logprobs: bool = True

    @classmethod
    def of(cls, spec) -> Settings:
        return cls(**{k: getattr(spec, k) for k in cls.__dataclass_fields__})


def api_key(settings: Settings) -> str:
    """The key from the named variable; servers without keys get a placeholder the client requires."""
    if not settings.api_key_env:
        return "no-key"
    value = os.environ.get(settings.api_key_env, "")
    if not value:
        raise Unauthorised(
            f"{settings.name}: the environment variable {settings.api_key_env} (its api_key_env) is not set; "
            f"export {settings.api_key_env}=<your key> in the shell that starts the lab"
        )
    return value


def _run(coroutine):
    """Run a coroutine to the end from sync code, also where an event loop already runs (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def probe(settings: Settings, timeout: float = PROBE_TIMEOUT_S) -> tuple[str, str]:
    """(state, one line with the remedy): reachable | unreachable | unauthorised | model missing | error."""
    try:
        key = api_key(settings)
    except Unauthorised as exc:
        return "unauthorised", str(exc)
    client = openai.OpenAI(base_url=settings.base_url, api_key=key, timeout=timeout, max_retries=0)
    try:
        served = [m.id for m in client.models.list()]
    except openai.AuthenticationError:
        return "unauthorised", (
            f"{settings.name}: {settings.base_url} refused the key in ${settings.api_key_env or '(none)'}; "
            "check the key, or set api_key_env to the variable that holds it"
        )
    except (openai.APIConnectionError, openai.APITimeoutError):
        return "unreachable", (
            f"{settings.name}: nothing answered at {settings.base_url} within {timeout:g} s; "
            "start the server, or fix base_url in the registry"
        )
    except openai.APIStatusError as exc:
        return "error", f"{settings.name}: {settings.base_url}/models answered HTTP {exc.status_code}"
    finally:
        client.close()
    if settings.model not in served:
        return "model missing", (
            f"{settings.name}: {settings.base_url} serves {served}, not {settings.model!r}; set model to one of those"
        )
    return "reachable", f"{settings.name}: {settings.model} at {settings.base_url}"


def _first_answer_token(logprobs) -> tuple[tuple[str, float], ...] | None:
    """The top log-probabilities of the first non-blank generated token, from the chat shape
    (`content[i].top_logprobs`) or the legacy completions shape (`top_logprobs[i]`, token → logprob)."""
    if logprobs is None:
        return None
    data = logprobs if isinstance(logprobs, dict) else logprobs.model_dump()
    for entry in data.get("content") or []:
        if entry.get("token", "").strip():
            return tuple((t["token"], float(t["logprob"])) for t in entry.get("top_logprobs") or [])
    tokens, tops = data.get("tokens") or [], data.get("top_logprobs") or []
    for token, top in zip(tokens, tops):
        if token.strip() and top:
            return tuple((t, float(lp)) for t, lp in top.items())
    return None


@dataclass
class Stats:
    """What an endpoint did in this process (the benchmark reads it; runs show `batch.Meter`)."""

    requests: int = 0
    cached: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    errors: dict = field(default_factory=dict)
    latencies: list = field(default_factory=list)

    def add(self, done: Completion) -> None:
        self.latencies.append(done.latency_ms)
        if done.error:
            kind = done.error.split(":", 1)[0]
            self.errors[kind] = self.errors.get(kind, 0) + 1
        elif done.cached:
            self.cached += 1
        else:
            self.requests += 1
            self.tokens_in += done.tokens_in
            self.tokens_out += done.tokens_out
            self.cost += done.cost

    def latency_ms(self, quantile: float) -> float:
        return (
            float(statistics.quantiles(self.latencies, n=100)[int(100 * quantile) - 1])
            if len(self.latencies) > 1
            else 0.0
        )


class Endpoint:
    """A registered endpoint: `complete(prompts)` sends them (at most max_concurrency at once) and returns
    one Completion per prompt, in order, from the cache where it holds the answer."""

    def __init__(self, settings: Settings, http_client_factory=None, cache_path=None):
        """`http_client_factory` (tests only) makes the `httpx2.AsyncClient` the openai client sends with,
        to produce faults a real server cannot (a 429 with Retry-After)."""
        self.settings, self.key = settings, api_key(settings)
        self.device = f"endpoint {settings.base_url}"
        self.http_client_factory, self.cache_path = http_client_factory, cache_path
        self.server_model: str | None = None
        self.warned: set[str] = set()  # answering model ids already warned about
        self.stats = Stats()

    def _client(self) -> openai.AsyncOpenAI:
        s = self.settings
        extra = {"http_client": self.http_client_factory()} if self.http_client_factory else {}
        return openai.AsyncOpenAI(
            base_url=s.base_url, api_key=self.key, timeout=s.timeout_s, max_retries=s.max_retries, **extra
        )

    async def _server_model(self, client: openai.AsyncOpenAI) -> str:
        """How the server describes the model (part of every cache key), read once per process: its id, and
        the weights it names where it names them (vLLM's `root`, `parent`). A server that names no weights
        (llama.cpp's, Ollama's) cannot tell new weights under an old name: register those under a new name."""
        if self.server_model is None:
            try:
                listing = [m async for m in client.models.list()]
                served = [m.id for m in listing]
            except openai.AuthenticationError:
                raise Unauthorised(
                    f"{self.settings.name}: {self.settings.base_url} refused the key in "
                    f"${self.settings.api_key_env or '(none)'}"
                ) from None
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
                raise EndpointDown(
                    f"{self.settings.name}: nothing answers at {self.settings.base_url} ({exc}); "
                    "start the server and run the same command again: the run resumes"
                ) from None
            if self.settings.model not in served:
                raise ModelMissing(
                    f"{self.settings.name}: {self.settings.base_url} serves {served}, not {self.settings.model!r}"
                )
            entry = listing[served.index(self.settings.model)]
            named = {k: v for k, v in (entry.model_extra or {}).items() if k in ("root", "parent") and v}
            self.server_model = entry.id + "".join(f"|{k}={v}" for k, v in sorted(named.items()))
        return self.server_model

    def params(self, max_tokens: int | None, temperature: float | None, top_logprobs: int, seed: int | None) -> dict:
        s = self.settings
        params = {
            "max_tokens": max_tokens or s.max_tokens,
            "temperature": s.temperature if temperature is None else temperature,
        }
        if (seed if seed is not None else s.seed) is not None:
            params["seed"] = seed if seed is not None else s.seed
        if top_logprobs and s.logprobs:
            params |= {"logprobs": True, "top_logprobs": top_logprobs}
        return params

    async def _one(
        self, client, gate: asyncio.Semaphore, prompt: str, params: dict, budget: spend.Budget, on_text=None
    ) -> Completion:
        s = self.settings
        messages = [{"role": "user", "content": prompt}]
        key = cache.key(s.base_url, self.server_model, messages, params)
        started = time.perf_counter()
        hit = cache.get(key, self.cache_path)
        if hit is not None:
            if on_text is not None:
                on_text(hit["text"])
            return Completion(
                hit["text"],
                _tuple(hit.get("top_logprobs")),
                hit["tokens_in"],
                hit["tokens_out"],
                1000 * (time.perf_counter() - started),
                0.0,
                True,
                usage_reported=hit.get("usage_reported", True),
                model=hit.get("model"),
            )
        estimate = spend.cost(len(prompt) // CHARS_PER_TOKEN + 8, params["max_tokens"], s.price_in, s.price_out)
        async with gate:
            await budget.reserve_when_it_fits(s.name, estimate, s.daily_cap, self.cache_path, s.person_daily_cap)
            started, actual = time.perf_counter(), 0.0
            try:
                said = await self._ask(client, messages, params, on_text)
            except openai.AuthenticationError:
                raise Unauthorised(f"{s.name}: {s.base_url} refused the key in ${s.api_key_env or '(none)'}") from None
            except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
                actual = estimate  # it may have done (and billed) the work: the worst case is charged
                raise ServerBroken(
                    f"{s.name}: {s.base_url} sent a response that is not valid JSON ({type(exc).__name__}: "
                    f"{str(exc)[:120]}); no item got it as its answer. Fix the server, then run the same command: "
                    "the run resumes with these items"
                ) from None
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
                if _cut_short(exc):  # it is up, and answered: the body broke off
                    actual = estimate
                    raise ServerBroken(
                        f"{s.name}: {s.base_url} cut its response short ({exc.__cause__}); no item got it as its "
                        "answer. The server is up but broke off: check its log, then run the same command"
                    ) from None
                raise EndpointDown(
                    f"{s.name}: {s.base_url} stopped answering ({type(exc).__name__} after {s.max_retries} "
                    "retries); start the server and run the same command again: the run resumes"
                ) from None
            except (openai.RateLimitError, openai.InternalServerError) as exc:
                raise EndpointDown(
                    f"{s.name}: {s.base_url} answered HTTP {exc.status_code} through {s.max_retries} retries; "
                    "try later, or lower max_concurrency"
                ) from None
            except (
                openai.APIStatusError
            ) as exc:  # this prompt was refused (too long, a bad parameter): the item's error
                return Completion(
                    "",
                    error=f"HTTP {exc.status_code}: {str(exc.message)[:300]}",
                    latency_ms=1000 * (time.perf_counter() - started),
                )
            else:  # a server that reports no usage is charged the worst case, so no cap is passed unseen
                actual = (
                    spend.cost(said["tokens_in"], said["tokens_out"], s.price_in, s.price_out)
                    if said["usage_reported"]
                    else estimate
                )
            finally:
                budget.settle(s.name, estimate, actual, self.cache_path)
            latency = 1000 * (time.perf_counter() - started)
        cache.put(key, said, self.cache_path)
        self._check_model(said["model"])
        if said["usage_reported"] and said["tokens_out"] > params["max_tokens"]:
            raise spend.BudgetReached(  # its answer is kept (cached); the run stops before the next request
                f"{s.name}: {s.base_url} reported {said['tokens_out']:,} output tokens for max_tokens "
                f"{params['max_tokens']:,}: a server that does not keep to max_tokens can pass any spending cap, so "
                f"the run stopped (spent {spend.usd(budget.spent)} in it); fix the server, then run the same command"
            )
        return Completion(
            said["text"],
            _tuple(said["top_logprobs"]),
            said["tokens_in"],
            said["tokens_out"],
            latency,
            actual,
            False,
            usage_reported=said["usage_reported"],
            model=said["model"],
        )

    def _check_model(self, answered: str | None) -> None:
        """Warn (once per id, per process) when an answer names another model than the one registered: the server
        may have swapped its weights midway. Each prediction keeps the id it was answered by (`server_model`)."""
        if answered and answered != self.settings.model and answered not in self.warned:
            self.warned.add(answered)
            log.warning(
                "%s: %s answered as model %r, not the registered %r: its weights may have changed midway; each "
                "prediction records the model that answered it (text.server_model)",
                self.settings.name,
                self.settings.base_url,
                answered,
                self.settings.model,
            )

    async def _ask(self, client, messages: list[dict], params: dict, on_text=None) -> dict:
        """One request: the text, the first answer token's top logprobs, tokens, finish reason and the model the
        server names. With `on_text`, streamed: on_text(text so far) at every piece."""
        if on_text is None:
            response = await client.chat.completions.create(model=self.settings.model, messages=messages, **params)
            choice, usage = response.choices[0], response.usage
            return {
                "text": choice.message.content or "",
                "finish_reason": choice.finish_reason,
                "model": response.model,
                "top_logprobs": _first_answer_token(choice.logprobs) if params.get("logprobs") else None,
                "tokens_in": usage.prompt_tokens if usage else 0,
                "tokens_out": usage.completion_tokens if usage else 0,
                "usage_reported": usage is not None,
            }
        stream = await client.chat.completions.create(
            model=self.settings.model, messages=messages, stream=True, stream_options={"include_usage": True}, **params
        )
        text, top, usage, finish, model = "", None, None, None, self.settings.model
        async for event in stream:
            usage, model = event.usage or usage, event.model or model
            if not event.choices:
                continue
            choice = event.choices[0]
            finish = choice.finish_reason or finish
            if top is None and params.get("logprobs") and choice.logprobs is not None:
                top = _first_answer_token(choice.logprobs)
            if choice.delta.content:
                text += choice.delta.content
                on_text(text)
        return {
            "text": text,
            "finish_reason": finish,
            "model": model,
            "top_logprobs": top,
            "tokens_in": usage.prompt_tokens if usage else 0,
            "tokens_out": usage.completion_tokens if usage else 0,
            "usage_reported": usage is not None,
        }

    async def _all(
        self, prompts: list[str], params: dict, budget: spend.Budget, on_text=None, on_done=None
    ) -> list[Completion]:
        async with self._client() as client:
            await self._server_model(client)
            gate = asyncio.Semaphore(max(1, self.settings.max_concurrency))
            tasks = [asyncio.ensure_future(self._one(client, gate, p, params, budget, on_text)) for p in prompts]
            for i, task in enumerate(tasks) if on_done is not None else ():  # each answer as it comes back
                task.add_done_callback(lambda t, i=i: on_done(i, t.result()) if _answered(t) else None)
            try:
                return list(await asyncio.gather(*tasks))
            except BaseException:
                for task in tasks:
                    task.cancel()
                raise

    def complete(
        self,
        prompts: list[str],
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_logprobs: int = 0,
        seed: int | None = None,
        budget: spend.Budget | None = None,
        on_text=None,
        on_done=None,
    ) -> list[Completion]:
        """One Completion per prompt, in order. `on_text(text so far)` streams the answer of a single prompt
        (the Playground); a cached answer is passed whole. `on_done(i, completion)` hears each prompt's answer as it
        comes back (in any order)."""
        if on_text is not None and len(prompts) != 1:
            raise ValueError("on_text streams one prompt's answer; pass one prompt")
        done = _run(
            self._all(
                prompts,
                self.params(max_tokens, temperature, top_logprobs, seed),
                budget or spend.Budget(),
                on_text,
                on_done,
            )
        )
        for completion in done:
            self.stats.add(completion)
        return done


def _answered(task: asyncio.Future) -> bool:
    """Whether a prompt's task ended with an answer (not cancelled, not failed: those are raised by gather)."""
    return not task.cancelled() and task.exception() is None


def _cut_short(exc: Exception) -> bool:
    """Whether a connection error is a response that broke off (HTTP protocol error), not a server that is down."""
    return any(kind.__name__.endswith("ProtocolError") for kind in type(exc.__cause__).__mro__)


def _tuple(pairs) -> tuple[tuple[str, float], ...] | None:
    return tuple((str(t), float(lp)) for t, lp in pairs) if pairs is not None else None
