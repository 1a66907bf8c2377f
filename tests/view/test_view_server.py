"""``assay view`` over real HTTP on 127.0.0.1: pages, filters, paging, safety headers, token, read-only."""

from __future__ import annotations

import hashlib
import json
import http.client
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import pytest
from view_data import IMG, SCRIPT, store_with_runs

import assay
import assay.view._layout as layout
from assay.metrics import MetricContext, metric
from assay.store import RunStore
from assay.view import CSP, ViewServer


def get(origin: str, path: str, headers: dict[str, str] | None = None, method: str = "GET"):
    parts = urllib.parse.urlsplit(origin)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read().decode("utf-8")
    finally:
        conn.close()


def links(body: str, pattern: str) -> list[str]:
    return [urllib.parse.unquote(m) for m in re.findall(r'href="([^"]*)"', body) if re.search(pattern, m)]


def test_runs_page_lists_runs_with_safety_headers(demo, serve):
    store, ids = demo
    v = serve(store)
    status, headers, body = get(v.origin, "/")
    assert status == 200
    assert headers["Content-Security-Policy"] == CSP and "script-src 'self'" in CSP and "unsafe" not in CSP
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["Referrer-Policy"] == "no-referrer"
    assert links(body, r"^/runs/") == [f"/runs/{ids['demo']}", f"/runs/{ids['hostile']}", f"/runs/{ids['older']}"]
    assert "runs 1–3 of 3" in body
    assert "<script>window" not in body and "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in body
    assert "http://" not in body.replace(v.origin, "") and "https://" not in body  # nothing from elsewhere


@pytest.mark.parametrize(("query", "expected"), [
    ("tag=env%3Dnightly", ["demo"]), ("tag=env", ["demo", "older"]), ("name=demo", ["demo", "older"]),
    ("q=evil", ["hostile"]), ("tag=env%3Dnone", [])], ids=["tag-value", "tag-key", "name", "text", "no-match"])
def test_runs_filters(demo, serve, query, expected):
    store, ids = demo
    v = serve(store)
    _, _, body = get(v.origin, "/?" + query)
    assert links(body, r"^/runs/[^/?]+$") == [f"/runs/{ids[k]}" for k in expected]


def test_name_filter_draws_the_trend_with_its_points(demo, serve):
    store, ids = demo
    v = serve(store)
    _, _, body = get(v.origin, "/?name=demo&metric=latency_score%3Amean")
    assert "Trend of demo: latency_score mean" in body
    assert body.count('<circle') - body.count('class="point') == 0  # every point is a circle of the series
    assert len(re.findall(r'<circle[^>]*class="point', body)) >= 2 + 2  # two runs, and the legend's samples


def test_run_page_failures_first_with_links_to_trace_pages(demo, serve):
    store, ids = demo
    v = serve(store)
    status, _, body = get(v.origin, f"/runs/{ids['demo']}")
    assert status == 200
    failures = body[body.index('id="failures"'):body.index('</section>', body.index('id="failures"'))]
    assert links(failures, "/traces/") == [f"/runs/{ids['demo']}/traces/{i}" for i in (2, 5, 9, 10)]
    assert "support-refund-2" in failures and "tool_selection_accuracy" in failures
    assert body.index('id="failures"') < body.index('id="metrics"') < body.index('id="traces"')
    assert "Compare with the previous demo run" in body


@pytest.mark.parametrize(("query", "expected"), [
    ("verdict=fail", ["support-refund-2", "weather-paris-2", "injection-attempt", "trip-planner"]),
    ("metric=tool_selection_accuracy&verdict=fail", ["support-refund-2", "weather-paris-2"]),
    ("q=weather", ["weather-paris-0", "weather-paris-1", "weather-paris-2", "weather-paris-3"]),
], ids=["verdict", "metric-verdict", "text"])
def test_run_page_trace_filters(demo, serve, query, expected):
    store, ids = demo
    v = serve(store)
    _, _, body = get(v.origin, f"/runs/{ids['demo']}?{query}")
    listed = body[body.index('<section id="traces"'):]
    shown = re.findall(r'data-nav>([^<]+)</a>', listed)
    assert shown == expected


def test_trace_lists_are_paged(demo, serve, monkeypatch):
    store, ids = demo
    monkeypatch.setattr(layout, "PAGE_SIZE", 5)
    monkeypatch.setattr("assay.view._pages.PAGE_SIZE", 5)
    v = serve(store)
    pages = []
    for n in (1, 2, 3):
        _, _, body = get(v.origin, f"/runs/{ids['demo']}?page={n}")
        listed = body[body.index('<section id="traces"'):]
        pages.append(re.findall(r'data-nav>([^<]+)</a>', listed))
        assert f"traces {5 * (n - 1) + 1}–{min(5 * n, 12)} of 12" in listed
    assert [len(p) for p in pages] == [5, 5, 2] and len({i for p in pages for i in p}) == 12


def test_trace_page_shows_reasons_and_the_conversation(demo, serve):
    store, ids = demo
    v = serve(store)
    status, _, body = get(v.origin, f"/runs/{ids['demo']}/traces/2")
    assert status == 200
    assert "support-refund-2" in body and "metric-results" in body and 'class="conversation"' in body
    assert "tool_selection_accuracy" in body and "0.667" in body
    assert f"/runs/{ids['demo']}/traces/1" in body and f"/runs/{ids['demo']}/traces/3" in body  # previous / next
    assert get(v.origin, f"/runs/{ids['demo']}/traces/12")[0] == 404
    assert get(v.origin, "/runs/nosuchrun")[0] == 404


def test_hostile_content_is_escaped(demo, serve):
    store, ids = demo
    v = serve(store)
    _, _, body = get(v.origin, f"/runs/{ids['hostile']}/traces/0")
    assert SCRIPT not in body and IMG not in body and "<style>body" not in body
    assert "&lt;script&gt;" in body
    assert "\u202e" not in body and "safe\u27e8U+202E\u27e9txt.exe" in body  # the override shown, not obeyed


def test_compare_page_puts_regressions_first(demo, serve):
    store, ids = demo
    v = serve(store)
    status, _, body = get(v.origin, f"/compare?a={ids['older']}&b={ids['demo']}")
    assert status == 200
    assert 'id="comparison"' in body
    pairs = body[body.index('id="pairs"'):]
    first = re.search(r'<tr class="(\w+)">.*?data-nav>([^<]+)</a>', pairs)
    assert first[1] == "pass_to_fail" and first[2] == "support-refund-2"


def test_read_only_methods_and_the_store_unchanged(demo, serve):
    store, ids = demo
    # the database and its write-ahead log (not the -shm wal-index: shared memory every reader writes
    # its read marks into). Whether the writer's log is still there when the test starts depends on
    # when its connection was collected, and a reader may open an empty one: no frames is no change.
    def files():
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in store.path.parent.glob("runs.sqlite3*")
                if not p.name.endswith("-shm") and p.stat().st_size > 0}

    before = files()
    v = serve(store)
    for path in ("/", f"/runs/{ids['demo']}", f"/runs/{ids['demo']}/traces/2", f"/compare?a={ids['older']}&b={ids['demo']}",
                 "/?name=demo"):
        assert get(v.origin, path)[0] == 200
    assert get(v.origin, "/", method="POST")[0] == 405
    assert get(v.origin, f"/runs/{ids['demo']}", method="DELETE")[0] == 405
    assert files() == before and store.path.name in before


def test_a_foreign_host_header_is_refused_on_loopback(demo, serve):
    store, _ = demo
    v = serve(store)
    assert get(v.origin, "/", {"Host": "attacker.example:80"})[0] == 421
    assert get(v.origin, "/", {"Host": f"localhost:{v.server.server_address[1]}"})[0] == 200


def test_a_token_is_checked_on_every_request(demo, serve):
    store, ids = demo
    v = serve(store, token="s3cret-token")
    assert get(v.origin, "/")[0] == 403
    assert get(v.origin, "/static/view.css")[0] == 403
    assert get(v.origin, f"/runs/{ids['demo']}?token=wrong")[0] == 403
    status, headers, _ = get(v.origin, "/?token=s3cret-token")
    assert status == 200 and headers["Set-Cookie"].startswith("assay_view_token=s3cret-token;")
    assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
    assert get(v.origin, f"/runs/{ids['demo']}", {"Cookie": "assay_view_token=s3cret-token"})[0] == 200
    assert get(v.origin, "/", {"Cookie": "assay_view_token=nope"})[0] == 403


def test_any_other_address_gets_a_token(demo):
    store, _ = demo
    server = ViewServer(store, "0.0.0.0", 0)
    try:
        assert server.token and len(server.token) >= 24 and f"?token={server.token}" in server.url
    finally:
        server.server_close()
    local = ViewServer(store, "127.0.0.1", 0)
    try:
        assert local.token is None and "token" not in local.url
    finally:
        local.server_close()


def test_a_run_being_written_is_listed_without_a_restart(tmp_path, serve):
    store, _ = store_with_runs(tmp_path)
    v = serve(store)
    recorder = store.start(inputs=[], metrics=[{"name": "tool_selection_accuracy"}], config={"name": "live"})
    try:
        recorder.flush()
        _, _, body = get(v.origin, "/?name=live")
        assert links(body, r"^/runs/[^/?]+$") == [f"/runs/{recorder.run_id}"] and "running" in body
        assert get(v.origin, f"/runs/{recorder.run_id}")[0] == 200
    finally:
        recorder.abort("interrupted", "test over")


def test_compare_pairs_filter_by_metric_change_and_text(demo, serve):
    store, ids = demo
    v = serve(store)
    base = f"/compare?a={ids['older']}&b={ids['demo']}"
    _, _, body = get(v.origin, base + "&metric=tool_selection_accuracy&change=pass_to_fail")
    pairs = body[body.index('id="pairs"'):]
    assert re.findall(r'data-nav>([^<]+)</a>', pairs) == ["support-refund-2"]
    assert "Δ tool_selection_accuracy" in pairs
    _, _, body = get(v.origin, base + "&change=same&q=weather")
    shown = re.findall(r'data-nav>([^<]+)</a>', body[body.index('id="pairs"'):])
    assert shown and all("weather" in s for s in shown)


def test_run_page_failures_quote_their_evidence(tmp_path, serve):
    @metric("quotes_first_output", dimension="custom", register=False)
    @dataclass(frozen=True, kw_only=True)
    class QuotesFirst:
        threshold: float = 0.5

        def score(self, ctx: MetricContext):
            out = ctx.trace.turns[0].output or ""
            return ctx.result(0.0, reason="always fails", evidence=[out[:30]])

    store = RunStore(tmp_path / "runs.sqlite3")
    run_id = assay.evaluate(str(Path(__file__).parents[2] / "examples" / "traces.jsonl"), [QuotesFirst()],
                            store=str(store.path), name="quoted").run.run_id
    v = serve(store)
    _, _, body = get(v.origin, f"/runs/{run_id}")
    failures = body[body.index('id="failures"'):body.index('</section>', body.index('id="failures"'))]
    assert failures.count('<ul class="evidence"><li><q>') == 12
    _, _, trace_page = get(v.origin, f"/runs/{run_id}/traces/0")
    assert "<mark" in trace_page  # the quote marked in the conversation


@pytest.mark.parametrize("verdict", ["pass", "fail", "error", "null"])
def test_verdict_filters_match_the_decoded_traces(demo, serve, verdict):
    from assay.report._conversation import trace_status
    from assay.store import stored_results

    store, ids = demo
    v = serve(store)
    _, _, body = get(v.origin, f"/runs/{ids['demo']}?verdict={verdict}&q=-")
    shown = re.findall(r'data-nav>([^<]+)</a>', body[body.index('<section id="traces"'):])
    expected = [t.id for _, t in stored_results(store, ids["demo"]) if trace_status(t) == verdict and "-" in t.id]
    assert shown == expected and (verdict in ("error", "null") or expected)


def test_run_page_draws_the_per_task_grid_linking_each_trial(tmp_path, serve):
    # two tasks x three trials: one steady, one flaky with a failed run; every cell opens its trace page
    traces = []
    for task, outcomes in (("steady", ["ok", "ok", "ok"]), ("flaky", ["ok", "bad", "failed"])):
        for k, how in enumerate(outcomes):
            t = {"id": f"{task}-{k}", "task_id": task, "trial": k,
                 "turns": [{"input": "book", "output": "done", "tool_calls": [{"name": "book" if how == "ok" else "x"}]}],
                 "expected": {"tool_calls": [{"name": "book"}]}}
            if how == "failed":
                t["status"] = "failed"
            traces.append(t)
    src = tmp_path / "trials.jsonl"
    src.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    store = RunStore(tmp_path / "runs.sqlite3")
    run_id = assay.evaluate(str(src), ["tool_selection_accuracy"], store=str(store.path), name="trials").run.run_id
    v = serve(store)
    _, _, body = get(v.origin, f"/runs/{run_id}")
    grid = body[body.index('id="tasks"'):body.index('</section>', body.index('id="tasks"'))]
    assert "Per task (2 tasks, 1 flaky)" in grid and "1 failed run" in grid
    cells = re.findall(r'<span class="cell ([a-z-]+)"[^>]*><a href="([^"]+)"', grid)
    assert sorted(c for c, _ in cells) == ["fail", "failed-run", "pass", "pass", "pass", "pass"]
    assert sorted(urllib.parse.unquote(u) for _, u in cells) == sorted(f"/runs/{run_id}/traces/{i}" for i in range(6))
    assert 'href="#tasks"' in body  # in the page's table of contents
