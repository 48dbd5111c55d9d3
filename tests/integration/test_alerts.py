"""The alerting rules and the dashboard musicd ships (issue 29, docs/monitoring.md):
config/prometheus/musicd.rules.yml passes `promtool check rules` and its unit tests
(musicd.rules.test.yml), and each alert's tests fail when its rule is broken to fire always (a
silent case catches it) or never (a firing case does); every alert carries a severity and a
runbook-style description. config/grafana/musicd-dashboard.json is a Grafana 10 dashboard model
(checked by its structure: Debian has no Grafana): its datasource a variable, every query
filtered by the job and instance variables, ids unique, the grid sane. And a real Prometheus
scraping a real musicd under a short load with errors (404s, 503s with the database cut,
refused signed-URL tokens) loads the rules and answers every expression of the rules and of the
dashboard, and a series for each metric selector in them: no misspelt metric or label survives.
"""

import json
import re
import subprocess
import time

import pytest
import yaml

import httpraw
from edgeauth import new_key, python_token, track_acl, write_key_file
from prometheus_server import JOB, PROMTOOL, ApiError, require
from support import REPO, scaled, wait_until

RULES = REPO / "config" / "prometheus" / "musicd.rules.yml"
RULE_TESTS = REPO / "config" / "prometheus" / "musicd.rules.test.yml"
DASHBOARD = REPO / "config" / "grafana" / "musicd-dashboard.json"

TIMEOUT = scaled(10)
PROMTOOL_TIMEOUT = 60
SERIES_TIMEOUT = 60.0       # until every selector has a series in Prometheus (scaled)
RATE_INTERVAL = "1m"        # what $__rate_interval stands for in the test's queries
GRAFANA_SCHEMA = 38         # Grafana 10.0's: every Grafana from 10.0 on imports it
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
PANEL_TYPES = {"timeseries", "stat", "heatmap"}
GRID_COLUMNS = 24
SEVERITIES = {"warning", "critical"}
UNKNOWN_ID = "0123456789abcdef01234567"  # valid, and no document has it


def rules():
    return yaml.safe_load(RULES.read_text())


def alerts():
    return [r for g in rules()["groups"] for r in g["rules"] if "alert" in r]


def records():
    return [r for g in rules()["groups"] for r in g["rules"] if "record" in r]


def dashboard():
    return json.loads(DASHBOARD.read_text())


def promtool(*args, cwd=None):
    return subprocess.run([require(PROMTOOL), *[str(a) for a in args]], capture_output=True,
                          text=True, timeout=PROMTOOL_TIMEOUT, cwd=cwd)


# -- PromQL's metric selectors --------------------------------------------------------------
# A small lexer, enough for the expressions shipped here: strings, range and subquery brackets
# and durations are taken whole, so a label name in a `by (...)` list, a function name or a
# word in a string is never mistaken for a metric.

TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<duration>(?:\d+(?:ms|[smhdwy]))+(?![\w.]))
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=,(){}@])
""", re.X)
KEYWORDS = {"and", "or", "unless", "offset", "bool", "atan2", "inf", "nan", "sum", "min", "max",
            "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
            "quantile", "start", "end"}
LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}


def tokens(expr):
    found, at = [], 0
    while at < len(expr):
        m = TOKEN.match(expr, at)
        assert m, f"cannot read {expr[at:]!r} in {expr!r}"
        if m.lastgroup != "space":
            found.append((m.lastgroup, m.group(), m.start(), m.end()))
        at = m.end()
    return found


def closing(toks, i, opening, closing_text):
    """The index of the token closing toks[i] (an opening bracket)."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j][:2] == ("op", opening):
            depth += 1
        elif toks[j][:2] == ("op", closing_text):
            depth -= 1
            if depth == 0:
                return j
    raise AssertionError(f"unbalanced {opening} in {toks}")


def selectors(expr):
    """Every metric selector of expr, as written ('name{matchers}', 'name' or '{matchers}')."""
    toks = tokens(expr)
    found, i = [], 0
    while i < len(toks):
        kind, text, start, _ = toks[i]
        following = toks[i + 1][:2] if i + 1 < len(toks) else None
        if kind == "name" and text.lower() in LABEL_LISTS:
            i = closing(toks, i + 1, "(", ")") + 1 if following == ("op", "(") else i + 1
        elif kind == "name" and (text.lower() in KEYWORDS or following == ("op", "(")):
            i += 1
        elif kind == "name" or (kind, text) == ("op", "{"):
            end = toks[i][3]
            brace = i + 1 if kind == "name" else i
            if brace < len(toks) and toks[brace][:2] == ("op", "{"):
                last = closing(toks, brace, "{", "}")
                end, brace = toks[last][3], last
            found.append(expr[start:end])
            i = brace + 1
        else:
            i += 1
    return found


@pytest.mark.no_c_binary
def test_the_selector_reader_finds_metrics_and_nothing_else():
    assert selectors('sum by (code, le) (rate(a_total{job="$job", x=~"{b}"}[$__rate_interval]))'
                     ) == ['a_total{job="$job", x=~"{b}"}']
    assert selectors('up == 0 and ignoring (kind) increase(e_total{kind="x"}[5m]) > 0') == \
        ["up", 'e_total{kind="x"}']
    assert selectors("a / (b > 0) and on (job, instance) c") == ["a", "b", "c"]
    assert selectors("rate(a[5m]) <= 4 * rate(a[1h] offset 5m) unless b") == ["a", "a", "b"]
    assert selectors("histogram_quantile(0.95, rate(instance_le:a_bucket:rate5m[5m]))") == \
        ["instance_le:a_bucket:rate5m"]
    assert selectors('absent(up{job="musicd"}) or vector(1e3)') == ['up{job="musicd"}']
    assert selectors('{__name__="a"} * on () group_left (b) c') == ['{__name__="a"}', "c"]
    assert selectors('sum without (code, method) (x) / count(y) by (z)') == ["x", "y"]


# -- the rules ------------------------------------------------------------------------------

@pytest.mark.no_c_binary
def test_promtool_checks_the_rules():
    result = promtool("check", "rules", RULES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alerts()) + len(records())} rules found" in result.stdout


@pytest.mark.no_c_binary
def test_the_rules_unit_tests_pass():
    # From another directory: the test file names the rules relative to itself.
    result = promtool("test", "rules", RULE_TESTS, cwd="/")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.no_c_binary
def test_each_alert_says_its_severity_what_it_means_and_where_to_look_first():
    names = [a["alert"] for a in alerts()]
    assert len(names) == len(set(names)), names
    for alert in alerts():
        assert alert["labels"]["severity"] in SEVERITIES, alert
        assert set(alert["annotations"]) == {"summary", "description"}, alert["alert"]
        assert "look first" in alert["annotations"]["description"].lower(), alert["alert"]


def rule_tests():
    """{alertname: [expected alert counts of its alert_rule_test cases]}"""
    counts = {}
    for group in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for case in group.get("alert_rule_test", []):
            counts.setdefault(case["alertname"], []).append(len(case.get("exp_alerts") or []))
    return counts


def report_with_every_alert(tmp_path, expr):
    """promtool's report on the unit tests, every alert's expr replaced by expr. (An
    alert_rule_test case reads its own alert only: one run breaks each alert on its own.)"""
    text = rules()
    for group in text["groups"]:
        for rule in group["rules"]:
            if "alert" in rule:
                rule["expr"] = expr
    (tmp_path / RULES.name).write_text(yaml.safe_dump(text, sort_keys=False))
    (tmp_path / RULE_TESTS.name).write_text(RULE_TESTS.read_text())
    result = promtool("test", "rules", tmp_path / RULE_TESTS.name)
    assert result.returncode != 0, f"every alert broken to {expr!r}: the tests still pass"
    return result.stdout + result.stderr


@pytest.mark.no_c_binary
def test_each_alert_has_tests_that_fail_when_its_rule_fires_always_or_never(tmp_path):
    tested = rule_tests()
    always = report_with_every_alert(tmp_path, "vector(1)")
    never = report_with_every_alert(tmp_path, "vector(1) == 0")
    for alert in alerts():
        name = alert["alert"]
        assert any(tested.get(name, [])), f"{name}: no test where it fires"
        assert 0 in tested.get(name, []), f"{name}: no test where it stays silent"
        # Always: a case expecting nothing gets an alert ("exp:[]" in promtool's report).
        assert re.search(rf"alertname: {name}, time: [^\n]*\n\s*exp:\[\],", always), \
            f"{name} firing always fails none of its silent cases:\n{always}"
        # Never: a case expecting the alert gets none.
        assert re.search(rf"alertname: {name}, time: [^\n]*\n\s*exp:\[\n(.|\n)*?got:\[\]",
                         never), f"{name} never firing fails none of its cases:\n{never}"


# -- the dashboard --------------------------------------------------------------------------

def all_panels(model):
    """Every panel, rows and the panels of collapsed rows included."""
    for panel in model["panels"]:
        yield panel
        yield from panel.get("panels", [])


def query_panels(model):
    return [p for p in all_panels(model) if p["type"] != "row"]


def panel_exprs(model):
    return [(p["title"], t["expr"]) for p in query_panels(model) for t in p["targets"]]


def variable_exprs(model):
    """The selectors of the query variables' label_values(SELECTOR, LABEL)."""
    found = []
    for v in model["templating"]["list"]:
        if v["type"] == "query":
            m = re.fullmatch(r"label_values\((.*),\s*\w+\)", v["query"]["query"])
            assert m, v
            found.append((f"variable {v['name']}", m.group(1)))
    return found


@pytest.mark.no_c_binary
def test_the_dashboard_is_a_grafana_10_model_reading_its_datasource_variable():
    model = dashboard()
    assert model["schemaVersion"] == GRAFANA_SCHEMA
    assert model["id"] is None and model["uid"] == "musicd" and model["title"]
    assert "__inputs" not in model and "${DS_" not in DASHBOARD.read_text()
    variables = {v["name"]: v for v in model["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for v in variables.values():
        if v["type"] == "query":
            assert v["datasource"] == DATASOURCE, v["name"]
    for panel in query_panels(model):
        assert panel["type"] in PANEL_TYPES, panel["title"]
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["description"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE, panel["title"]
    for row in model["panels"]:
        if row["type"] == "row":
            assert "datasource" not in row and not row.get("targets"), row["title"]


@pytest.mark.no_c_binary
def test_the_dashboard_panels_have_unique_ids_and_a_sane_grid():
    model = dashboard()
    ids = [p["id"] for p in all_panels(model)]
    assert all(isinstance(i, int) and i > 0 for i in ids) and len(ids) == len(set(ids)), ids
    cells = {}
    for p in all_panels(model):
        g = p["gridPos"]
        assert all(isinstance(g[k], int) for k in "xywh"), p["title"]
        assert g["x"] >= 0 and g["y"] >= 0 and g["w"] >= 1 and g["h"] >= 1, p["title"]
        assert g["x"] + g["w"] <= GRID_COLUMNS, p["title"]
        if p["type"] == "row":
            assert (g["x"], g["w"], g["h"]) == (0, GRID_COLUMNS, 1), p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = p["title"]
    # Rows in order down the page, each panel below its row.
    row_y = [p["gridPos"]["y"] for p in model["panels"] if p["type"] == "row"]
    assert row_y == sorted(row_y)


@pytest.mark.no_c_binary
def test_the_dashboard_has_its_rows_each_with_panels():
    # A row's panels follow it in the list (an expanded row holds none itself).
    shown = {}
    for p in dashboard()["panels"]:
        if p["type"] == "row":
            row = shown.setdefault(p["title"], list(p.get("panels", [])))
        else:
            row.append(p)
    for title in ["Requests", "Track starts", "Lookups", "Database pool", "Disk pool", "Limits",
                  "Connections and streams", "Per-client limits and pacing", "Signed URLs",
                  "Process"]:
        assert shown.get(title), (title, list(shown))


@pytest.mark.no_c_binary
def test_every_dashboard_query_is_filtered_by_the_job_and_instance_variables():
    model = dashboard()
    for title, expr in panel_exprs(model):
        for selector in selectors(expr):
            assert 'job="$job"' in selector and 'instance=~"$instance"' in selector, \
                (title, selector)
    # Nowhere a job or an instance of someone's own.
    literal = re.compile(r"""\b(job|instance)\s*(=|=~|!=|!~)\s*(\\?["'])(?!\$)""")
    assert not literal.search(DASHBOARD.read_text()), literal.search(DASHBOARD.read_text())


# -- a real Prometheus, a real musicd --------------------------------------------------------

def for_prometheus(expr, instance):
    """A dashboard expression as Grafana sends it, the variables given their values."""
    # A multi-value variable is a regular expression, its backslashes doubled for PromQL's
    # string, as Grafana writes it.
    values = {"job": JOB, "instance": re.escape(instance).replace("\\", "\\\\"),
              "__rate_interval": RATE_INTERVAL}
    return re.sub(r"\$\{?(\w+)\}?", lambda m: values[m.group(1)], expr)


# The load: LOAD_ROUNDS rounds of good requests, a 404 and refused tokens, then OUTAGE_REQUESTS
# 503s. Enough refusals of each reason for MusicdURLSigningRefusalsSurge's floor (0.1 a second
# over 5 minutes: 30), and of 503s for a share of 5xx above MusicdHigh5xxShare's 5 %.
LOAD_ROUNDS = 10
REFUSALS_PER_ROUND = 4
OUTAGE_REQUESTS = 20
LOAD_PAUSE = 0.1           # seconds between rounds, so scrapes fall among them


def with_token(path, key, acl, expires):
    return f"{path}?__token__={python_token(key, acl, expires)}"


def short_load(server, tracks, key, db_proxy):
    """A few seconds of requests with the errors the alerts watch: 200, 206, 304 and 404 with
    good tokens, 403 for a missing, a badly signed and an expired token, then 503s with the
    database cut. Returns their statuses."""
    def get(target, headers=None):
        r, _ = httpraw.exchange(server.port, "GET", target, headers=headers or {},
                                timeout=TIMEOUT)
        return r

    warm, outage = tracks
    hour = int(time.time()) + 3600
    refused = [warm.url_path,                                                  # missing
               with_token(warm.url_path, new_key(), track_acl(warm.id), hour),  # bad_signature
               with_token(warm.url_path, key, track_acl(warm.id), hour - 7200)]  # expired
    statuses = []
    for _ in range(LOAD_ROUNDS):
        url = with_token(warm.url_path, key, track_acl(warm.id), hour)
        full = get(url)
        statuses += [full.status, get(url, {"Range": "bytes=0-99"}).status,
                     get(url, {"If-None-Match": full.header("ETag")}).status,
                     get(with_token(f"/musicdb/{UNKNOWN_ID}/x", key, track_acl(UNKNOWN_ID),
                                    hour)).status]
        statuses += [get(target).status for target in refused * REFUSALS_PER_ROUND]
        time.sleep(LOAD_PAUSE)
    db_proxy.proxy.stop()
    for _ in range(OUTAGE_REQUESTS):
        statuses.append(get(with_token(outage.url_path, key, track_acl(outage.id),
                                       hour)).status)
    return statuses


@pytest.mark.load
def test_a_real_prometheus_answers_every_expression_and_a_series_for_every_selector(
        musicd, library, db_proxy, prometheus, tmp_path):
    key = new_key()
    keys = write_key_file(tmp_path / "url-signing.keys", [key])
    tracks = [library.add(library.media.short, f"{name}.mp3") for name in ("warm", "outage")]
    # Server selection fails fast once the database is cut: lookups end unavailable (503).
    server = musicd.start(mongodb_uri=db_proxy.uri + "&serverSelectionTimeoutMS=100", extra_args=[
        "--workers", "1", "--lookup-timeout", "2000", "--url-signing-key-file", keys,
        "--max-streams-per-client", "4", "--limit-rate", "1M"])
    p = prometheus.start(server.metrics_port, rule_files=[RULES])
    wait_until(p.target_up, scaled(SERIES_TIMEOUT), interval=0.5, message="the target up")
    groups = p.api("/api/v1/rules")["groups"]
    loaded = [r for g in groups for r in g["rules"]]
    assert len(loaded) == len(alerts()) + len(records())
    assert all(r["health"] != "err" for r in loaded), [r for r in loaded if r["health"] == "err"]

    statuses = short_load(server, tracks, key, db_proxy)
    assert sorted(set(statuses)) == [200, 206, 304, 403, 404, 503], statuses
    instance = f"127.0.0.1:{server.metrics_port}"

    # Every expression parses and runs; the dashboard's and the recorded ones give series.
    expressions = [(f"rule {r.get('alert') or r.get('record')}", r["expr"])
                   for r in alerts() + records()]
    shown = [(title, for_prometheus(expr, instance))
             for title, expr in panel_exprs(dashboard()) + variable_exprs(dashboard())]
    for where, expr in expressions + shown:
        try:
            p.query(expr)
        except ApiError as e:
            raise AssertionError(f"{where}: {expr}\n{e}") from None
    wanted = sorted({(where, selector) for where, expr in expressions + shown
                     for selector in selectors(expr)})

    def missing():
        return [(where, s) for where, s in wanted if not p.query(s)] + \
            [(where, expr) for where, expr in shown if not p.query(expr)]

    deadline = time.monotonic() + scaled(SERIES_TIMEOUT)
    while (left := missing()) and time.monotonic() < deadline:
        time.sleep(1)
    assert not left, "no series for:\n" + "\n".join(f"  {w}: {s}" for w, s in left)

    # The rules read the real series as they are: the outage, the 503s and the refusals the
    # load made are what three of the alerts watch for (pending, or firing once their `for`
    # has passed).
    def active():
        return {(a["labels"]["alertname"], a["labels"].get("reason", ""))
                for a in p.api("/api/v1/alerts")["alerts"]}

    expected = {("MusicdDatabaseUnavailable", ""), ("MusicdHigh5xxShare", ""),
                ("MusicdURLSigningRefusalsSurge", "missing"),
                ("MusicdURLSigningRefusalsSurge", "bad_signature"),
                ("MusicdURLSigningRefusalsSurge", "expired")}
    try:
        wait_until(lambda: expected <= active(), scaled(SERIES_TIMEOUT), interval=1,
                   message=f"{expected} among the alerts")
    except AssertionError as e:
        raise AssertionError(f"{e}\nactive: {active()}") from None
