"""The contexts the sections store and search: seeded text over a fixed vocabulary (so a
run's data is the same on every machine), their external ids, and the bulk-upsert."""

from __future__ import annotations

import random
import time
from typing import Any
from urllib.parse import quote

import httpx2
from _http import expect


def _words(text: str) -> list[str]:
    return text.split()


# Realistic-ish note text: a fixed vocabulary drawn with Zipf-like weights (a few words are
# everywhere, most are rare), function words included, so postings lists have natural sizes.
FUNCTION_WORDS = _words(
    "the of and to a in is for that on with as it be this by are from or at was not but"
    " we an have when which can if should then all its so into after before"
)
DOMAIN_WORDS = _words(
    "deploy service database migration index query cache latency timeout retry queue worker"
    " schema tenant workspace context memory agent session checkpoint lesson handoff task"
    " release rollback incident outage alert pager dashboard metric trace log span error"
    " budget token prompt model embedding vector search ranking snippet title content tag"
    " user customer feedback review design spec contract endpoint route handler request"
    " response header body payload quota plan limit scope key secret rotation audit chain"
    " hash row table column postgres docker container cluster node pod replica shard"
    " partition backup restore snapshot volume disk memory cpu thread loop coroutine async"
    " sync lock mutex race deadlock leak profile benchmark regression test fixture mock fake"
    " stub assertion coverage lint type check build pipeline ci runner artifact package"
    " version dependency upgrade patch hotfix branch merge commit diff conflict rebase tag"
    " python typescript node fastify zod httpx fastapi uvicorn pytest hypothesis schemathesis"
    " config environment variable flag feature toggle experiment cohort rollout canary"
    " billing invoice payment refund subscription trial churn onboarding signup login"
    " password session cookie jwt oauth sso permission role admin owner member invite"
    " email notification webhook event stream kafka consumer producer offset lag backlog"
    " storage bucket object upload download stream chunk compression encoding utf json"
    " parser validator serializer mapper adapter gateway proxy balancer dns certificate tls"
    " network packet socket port firewall vpn region zone failover replication consistency"
    " eventual strong transaction isolation commit rollback savepoint constraint foreign"
    " unique primary sequence vacuum analyze explain plan scan seek join aggregate window"
    " report export import csv spreadsheet chart graph summary insight decision owner"
    " meeting roadmap milestone deadline estimate priority blocker risk dependency followup"
    " documentation readme guide tutorial example sample recipe pattern antipattern"
    " refactor cleanup rename extract inline simplify optimize rewrite deprecate remove"
)
TAGS = _words(
    "infra backend frontend data ml security billing oncall postmortem design decision"
    " research howto todo urgent stale archive weekly customer internal"
)
SEARCH_TYPES = ("reference", "feedback", "project", "incident", "lesson", "user")


class TextGen:
    """Seeded generator of titles, sentences, tags and queries over the fixed vocabulary."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        words = list(dict.fromkeys(FUNCTION_WORDS + DOMAIN_WORDS))
        domain = [w for w in dict.fromkeys(DOMAIN_WORDS) if w not in FUNCTION_WORDS]
        random.Random(seed + 1).shuffle(domain)  # rank by a seeded order, not alphabetically
        self.words = [w for w in words if w in FUNCTION_WORDS] + domain
        self.weights = [1.0 / (rank + 1) for rank in range(len(self.words))]
        self.domain = domain
        self.domain_weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(domain))]

    def sentence(self, lo: int = 6, hi: int = 18) -> str:
        words = self.rng.choices(self.words, self.weights, k=self.rng.randint(lo, hi))
        return words[0].capitalize() + " " + " ".join(words[1:]) + "."

    def title(self) -> str:
        words = self.rng.choices(self.domain, self.domain_weights, k=self.rng.randint(3, 7))
        return " ".join(words).capitalize()

    def content(self) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(2, 6)))

    def tags(self) -> list[str]:
        return self.rng.sample(TAGS, self.rng.randint(0, 3))

    def query(self) -> str:
        return " ".join(
            self.rng.choices(self.domain, self.domain_weights, k=self.rng.randint(1, 4))
        )

    def context(self, external_id: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": self.rng.choice(SEARCH_TYPES),
            "title": self.title(),
            "content": self.content(),
            "tags": self.tags(),
        }
        if external_id is not None:
            body["externalId"] = external_id
        return body


def external_id(i: int) -> str:
    # A slash, a space and a non-ASCII letter: the id must be quoted as one path segment.
    return f"memories/notes {i:05d}/plan-é.md"


def by_external_path(ext_id: str) -> str:
    return "/api/contexts/by-external/" + quote(ext_id, safe="")


def populate(
    client: httpx2.Client, gen: TextGen, count: int, *, batch: int = 500, start: int = 0
) -> tuple[list[int], list[dict[str, Any]]]:
    """Bulk-upsert ``count`` generated contexts; return each batch's time (ns) and the items."""
    times: list[int] = []
    items: list[dict[str, Any]] = []
    for lo in range(start, start + count, batch):
        chunk = [gen.context(external_id(i)) for i in range(lo, min(lo + batch, start + count))]
        started = time.perf_counter_ns()
        response = client.post("/api/contexts/bulk-upsert", json={"contexts": chunk})
        times.append(time.perf_counter_ns() - started)
        expect(response, 200)
        items.extend(chunk)
    return times, items
