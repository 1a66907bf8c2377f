"""The metric registry's layers: built-ins, plugins, user registrations; clashes; no import-order effects."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from assay import ConfigError, MetricContext, evaluate, metric
from assay.metrics import Registry
from assay.metrics._base import REGISTRY

ROOT = Path(__file__).resolve().parents[2]


def _contains_clone(**kw):
    @metric("contains", dimension="custom", **kw)
    @dataclass(frozen=True, kw_only=True)
    class MyContains:
        threshold: float = 0.5

        def score(self, ctx: MetricContext):
            return ctx.result(0.123)

    return MyContains


def test_a_user_metric_with_a_builtin_name_is_an_error_where_it_is_defined(registry_snapshot):
    with pytest.raises(ConfigError) as exc:
        _contains_clone()
    message = str(exc.value)
    assert f"metric 'contains' from module {__name__}" in message
    assert "clashes with 'contains' from built-in (assay.metrics.reference.Contains)" in message
    assert "replace=True" in message
    assert REGISTRY.origins()["contains"] == "built-in"


def test_replace_true_takes_the_name_deliberately(registry_snapshot):
    cls = _contains_clone(replace=True)
    assert REGISTRY.get("contains") is cls and REGISTRY.origins()["contains"] == f"module {__name__}"
    assert evaluate([{"id": "x", "turns": [{"output": "a"}]}], ["contains"]).traces[0].metrics["contains"].score == 0.123


def test_redefining_the_same_class_replaces_it(registry_snapshot):
    """A notebook cell run twice defines the class again; that is not a clash."""
    for value in (0.25, 0.5):
        @metric("mine_twice", dimension="custom")
        def mine_twice(ctx, value=value):
            return value

    assert evaluate([{"id": "x", "turns": [{"output": "a"}]}], ["mine_twice"]).traces[0].metrics["mine_twice"].score == 0.5


def test_registration_order_does_not_matter():
    """A user metric defined before the built-ins were loaded fails the same way as after (fresh process)."""
    code = textwrap.dedent("""
        from dataclasses import dataclass
        from assay import ConfigError, metric
        from assay.metrics._base import REGISTRY
        assert not REGISTRY._builtins_loaded
        try:
            @metric("contains", dimension="custom")
            def contains(ctx):
                return 1.0
        except ConfigError as exc:
            print("clash:", "built-in" in str(exc))
        print("builtin kept:", REGISTRY.get("contains").__module__)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.stdout.split("\n")[:2] == ["clash: True", "builtin kept: assay.metrics.reference"], out.stderr


def test_a_separate_registry_holds_only_what_is_added_to_it():
    r = Registry()

    @metric("contains", dimension="custom", registry=r)  # no built-ins here: no clash
    def contains(ctx):
        return 1.0

    assert r.names() == ["contains"] and r.origins() == {"contains": f"module {__name__}"}
    r.remove("contains")
    assert r.names() == []
    with pytest.raises(ConfigError, match="unknown metric 'contains'"):
        r.remove("contains")


def test_installed_plugin_metrics_are_found_and_marked(installed_plugin, monkeypatch):
    r = Registry(plugins="assay.metrics")
    # the class entry point lands here; the module one registers into the default registry
    # (its rubric_metric call names no registry): tests/cli/test_cli_plugins.py sees both
    assert r.origins() == {"shouty": "plugin assay-dummy-plugin"}
    assert "from: plugin assay-dummy-plugin" in r.describe("shouty")


def test_a_user_registration_clashing_with_a_plugin_is_an_error_either_way(installed_plugin):
    # registered before the plugins are read: reported when they are (the first lookup)
    r = Registry(plugins="assay.metrics")

    @metric("shouty", dimension="custom", registry=r)
    def shouty(ctx):
        return 1.0

    with pytest.raises(ConfigError, match=f"'shouty' from plugin assay-dummy-plugin .* clashes with 'shouty' from "
                                          f"module {__name__}"):
        r.names()
    # registered after: reported at definition
    r2 = Registry(plugins="assay.metrics")
    r2.names()
    with pytest.raises(ConfigError, match=f"'shouty' from module {__name__} .* clashes with "
                                          "'shouty' from plugin assay-dummy-plugin"):
        metric("shouty", dimension="custom", registry=r2)(lambda ctx: 1.0)
    # replace=True wins in both orders
    for read_first in (False, True):
        r3 = Registry(plugins="assay.metrics")
        if read_first:
            r3.names()
        mine = metric("shouty", dimension="custom", registry=r3, replace=True)(lambda ctx: 1.0)
        assert r3.get("shouty") is mine


def test_the_plugin_groups_are_read_in_one_scan_kept_while_sys_path_is_the_same(tmp_path, monkeypatch):
    """A run looks up the metric, importer and judge groups: one scan of the installed distributions
    serves them all (each read every distribution's metadata), and a plugin on a new ``sys.path``
    entry is found (the scan is made again)."""
    from assay import _plugins
    from tests.support.plugin_dist import install_plugin, uninstall

    scans = []
    real = _plugins._scan
    monkeypatch.setattr(_plugins, "_scan", lambda: scans.append(1) or real())
    monkeypatch.setattr(_plugins, "_SCANNED", None)
    for group in ("assay.metrics", "assay.importers", "assay.judges", "assay.metrics"):
        assert _plugins.entry_points(group) == []
    assert scans == [1]
    root = install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(root))
    try:
        assert [ep.name for ep in _plugins.entry_points("assay.metrics")] and len(scans) == 2
        assert len(_plugins.entry_points("pytest11")) >= 0 and len(scans) == 2  # another group: the same scan
    finally:
        uninstall(root)


def test_the_direct_scan_finds_what_importlib_metadata_finds(tmp_path, monkeypatch):
    """The entry points read from the distributions' files are importlib.metadata's, group by group, in this
    environment and with a plugin installed twice (the copy first on ``sys.path`` counts, as there); each
    loads the same object and names the same distribution."""
    from importlib import metadata

    from assay import _plugins
    from tests.support.plugin_dist import install_plugin, uninstall

    first, second = install_plugin(tmp_path / "a"), install_plugin(tmp_path / "b")
    (second / "assay_dummy_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[assay.metrics]\nshadowed = assay_dummy_plugin:Shouty\n")
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    try:
        ours = _plugins._scan()
        theirs = metadata.entry_points()
        assert type(ours) is dict and set(ours) == set(theirs.groups)  # (the direct scan, not importlib.metadata's)
        for group in theirs.groups:
            assert sorted((ep.name, ep.value) for ep in ours[group]) == \
                sorted((ep.name, ep.value) for ep in theirs.select(group=group)), group
        assert "shadowed" not in {ep.name for ep in ours["assay.metrics"]}
        mine = {ep.name: ep for ep in ours["assay.metrics"]}["shouty"]
        real = next(ep for ep in theirs.select(group="assay.metrics") if ep.name == "shouty")
        assert mine.load() is real.load()
        assert _plugins.origin_of(mine) == _plugins.origin_of(real) == "plugin assay-dummy-plugin"
    finally:
        uninstall(first)
        uninstall(second)


def test_an_import_hook_that_finds_distributions_hands_the_scan_to_importlib_metadata(monkeypatch):
    """A finder of distributions the direct scan does not know (a zipapp's, a packager's) makes importlib.metadata
    scan; the importlib_metadata backport's, which reads ``sys.path`` as the scan does, does not."""
    import sys

    from assay import _plugins

    class Elsewhere:
        def find_spec(self, *args):
            return None

        def find_distributions(self, context=None):
            return iter(())
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Elsewhere()])
    assert type(_plugins._scan()) is not dict
    # the backport's finder, by its identity (importing the backport itself would take the standard library's
    # finder away for the rest of the session: it does that on import)
    backport = type("MetadataPathFinder", (Elsewhere,), {"__module__": "importlib_metadata"})
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if not isinstance(f, Elsewhere)] + [backport()])
    assert type(_plugins._scan()) is dict


def test_a_zip_on_sys_path_is_read_by_importlib_metadata(tmp_path, monkeypatch):
    """A distribution inside a zip file on ``sys.path`` is found: the scan hands such a path to importlib.metadata."""
    import zipfile

    from assay import _plugins

    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped_plugin-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped-plugin\nVersion: 1.0\n")
        z.writestr("zipped_plugin-1.0.dist-info/entry_points.txt", "[assay.metrics]\nzipped = zipped_plugin:Metric\n")
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.setattr(_plugins, "_SCANNED", None)
    assert [(ep.name, ep.value) for ep in _plugins.entry_points("assay.metrics")] == [("zipped", "zipped_plugin:Metric")]
    assert _plugins.origin_of(_plugins.entry_points("assay.metrics")[0]) == "plugin zipped-plugin"
    monkeypatch.setattr(_plugins, "_SCANNED", None)


def test_a_broken_plugin_is_named_in_the_error(tmp_path, monkeypatch):
    from tests.support.plugin_dist import install_plugin, uninstall

    root = install_plugin(tmp_path)
    (root / "assay_dummy_plugin" / "__init__.py").write_text("raise RuntimeError('half installed')\n")
    monkeypatch.syspath_prepend(str(root))
    try:
        with pytest.raises(ConfigError, match=r"plugin assay-dummy-plugin: entry point assay.metrics:\w+ = "
                                              r"'assay_dummy_plugin.*failed to load: RuntimeError: half installed"):
            Registry(plugins="assay.metrics").names()
    finally:
        uninstall(root)


def test_the_builtin_index_names_the_module_that_registers_each_metric():
    from assay.metrics._catalog import BUILTIN_MODULES

    wrong = {name: module for name, module in BUILTIN_MODULES.items()
             if REGISTRY.get(name).__module__ != f"assay.metrics.{module}"}
    assert not wrong, f"metrics/_catalog.py is stale for {sorted(wrong)}"


def test_naming_one_builtin_metric_imports_only_its_module():
    code = ("import sys; from assay.metrics._base import REGISTRY; REGISTRY.create('latency_score'); "
            "print(sorted(m for m in sys.modules if m.startswith('assay.metrics.') and not m.split('.')[-1].startswith('_')"
            " or m in ('assay.metrics._judged', 'assay.judge')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['assay.metrics.performance']", out
