"""The bundled SillyTavern extension's files agree with each other and with the installer: one
version everywhere, the interceptor the manifest names is the one index.js defines, every module
it imports is shipped, and (where Node.js is installed) every file parses as an ES module."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dle_desktop.st_bridge.install import INTERCEPTOR, bundled_extension_dir, bundled_version

EXT = bundled_extension_dir()


def manifest() -> dict:
    return json.loads((EXT / "manifest.json").read_text(encoding="utf-8"))


def test_one_version_in_the_manifest_and_the_code():
    code = (EXT / "api.js").read_text(encoding="utf-8")
    declared = re.search(r"export const VERSION = '([^']+)'", code)
    assert declared, "api.js must declare VERSION"
    assert declared.group(1) == manifest()["version"] == bundled_version()


def test_the_manifest_names_the_interceptor_index_js_defines():
    assert manifest()["generate_interceptor"] == INTERCEPTOR
    assert f"globalThis.{INTERCEPTOR} = " in (EXT / "index.js").read_text(encoding="utf-8")
    assert (EXT / manifest()["js"]).is_file() and (EXT / manifest()["css"]).is_file()


def test_every_relative_import_is_shipped():
    for js in EXT.glob("*.js"):
        for target in re.findall(r"from '(\./[^']+)'", js.read_text(encoding="utf-8")):
            assert (EXT / target).is_file(), f"{js.name} imports {target}, which is not in the extension"


def test_no_token_or_config_is_shipped():
    assert not (EXT / "dle-config.json").exists(), "the installer writes dle-config.json per install"


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_every_file_parses_as_javascript():
    for js in sorted(EXT.glob("*.js")):
        done = subprocess.run(["node", "--check", str(js)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{js.name}: {done.stderr}"


def test_every_slash_command_and_alias_is_in_the_readme():
    code = (EXT / "commands.js").read_text(encoding="utf-8")
    names = re.findall(r"\{ name: '(dle[a-z-]*)'", code)
    aliases = [a for group in re.findall(r"aliases: \[([^\]]*)\]", code) for a in re.findall(r"'([^']+)'", group)]
    assert len(names) >= 30 and "dle-set-field" in names and "dle-loc" in aliases
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    bridge = readme[readme.index("## SillyTavern: the bridge") : readme.index("## DeepLore Enhanced without Obsidian")]
    undocumented = [n for n in names + aliases if f"`/{n}" not in bridge]
    assert not undocumented, f"not in the README's bridge section: {undocumented}"
