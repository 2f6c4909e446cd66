"""DeepLore Enhanced's side of the Obsidian REST emulation, from a real browser: SillyTavern's
page (where DLE runs) calls DLE Desktop's emulation cross-origin the way DLE's obsidianFetch does
(Authorization: Bearer <key>, Accept per request, Content-Type only with a body), so CORS
preflights, listings, reads and writes are judged by Chromium itself, not by an HTTP client that
ignores CORS."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.sillytavern.dle_server import VAULT_NOTES, DleServer

pytestmark = pytest.mark.usefixtures("st_page")

#: DLE's obsidianFetch, as st-wire-contracts.md §4 describes it, plus its recursive listing
#: (10 folders at once) and its batched reads (50 at once).
DLE_CLIENT = """
window.dleLike = (base, key) => {
  const enc = p => p.split('/').map(encodeURIComponent).join('/');
  const req = async (method, path, { accept = 'application/json', body, type } = {}) => {
    const headers = { Authorization: `Bearer ${key}`, Accept: accept };
    if (body !== undefined) headers['Content-Type'] = type;
    const r = await fetch(base + path, { method, headers, body, mode: 'cors' });
    return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
  };
  const list = async dir => {
    const r = await req('GET', '/vault/' + (dir ? enc(dir) + '/' : ''));
    if (r.status !== 200) throw new Error(`Failed to list files at "${dir}": ${r.status}`);
    return JSON.parse(r.text).files.map(f => dir ? dir + '/' + f : f);
  };
  const walk = async () => {
    let dirs = [''], files = [];
    while (dirs.length) {
      const batch = dirs.splice(0, 10);
      const found = (await Promise.all(batch.map(list))).flat();
      dirs.push(...found.filter(f => f.endsWith('/')).map(f => f.slice(0, -1)));
      files.push(...found.filter(f => !f.endsWith('/')));
    }
    return files;
  };
  const readAll = async paths => {
    const out = {}; let failed = 0;
    for (let i = 0; i < paths.length; i += 50) {
      await Promise.all(paths.slice(i, i + 50).map(async p => {
        const r = await req('GET', '/vault/' + enc(p), { accept: 'text/markdown' });
        if (r.status === 200) out[p] = r.text; else failed += 1;
      }));
    }
    return { out, failed };
  };
  return { req, walk, readAll, enc };
};
"""


@pytest.fixture(scope="module")
def dle_in_page(st_page, dle: DleServer):
    st_page.evaluate(f"() => {{ {DLE_CLIENT} }}")
    return dle.olra_url, dle.olra_key()


def run(page, body: str, arg=None):
    return page.evaluate(f"async ([base, key, arg]) => {{ const dle = window.dleLike(base, key); {body} }}", arg)


def test_the_scanner_finds_it_without_a_key(st_page, dle_in_page):
    base, _ = dle_in_page
    answer = st_page.evaluate(
        "async (base) => { const r = await fetch(base + '/', { mode: 'cors' });"
        " return { status: r.status, body: await r.json() }; }",
        base,
    )
    assert answer["status"] == 200
    assert answer["body"]["service"] == "Obsidian Local REST API" and answer["body"]["authenticated"] is False


def test_dle_builds_its_index_through_the_emulation_in_a_browser(st_page, dle_in_page, sillytavern):
    base, key = dle_in_page
    got = run(
        st_page,
        "const files = await dle.walk(); const md = files.filter(f => f.endsWith('.md'));"
        " const { out, failed } = await dle.readAll(md); return { files, failed, out };",
        [base, key, None],
    )
    assert got["failed"] == 0
    assert set(VAULT_NOTES) <= set(got["files"]), got["files"]
    for name, text in VAULT_NOTES.items():
        assert got["out"][name] == text  # byte for byte, through a real browser's CORS


def test_a_note_dle_writes_lands_in_the_folder_and_the_index_at_once(st_page, dle_in_page, dle):
    base, key = dle_in_page
    note = (
        "---\ntags: [lorebook]\nkeys: [scribe-e2e]\n---\n# Session Note E2E\n"
        "LORE-SCRIBE: written by DLE's Session Scribe through the emulation.\r\n"
    )
    status = run(
        st_page,
        "return (await dle.req('PUT', '/vault/' + dle.enc('Sessions/Session Note E2E.md'),"
        " { accept: 'text/markdown', body: arg, type: 'text/markdown' })).status;",
        [base, key, note],
    )
    assert status == 204
    on_disk = dle.vault / "Sessions" / "Session Note E2E.md"
    assert on_disk.read_bytes() == note.encode("utf-8")
    # 204 means indexed: the lore API knows the note right away, no waiting for the file watcher.
    titles = [e["title"] for e in dle.get("/api/dle/v1/entries?q=session note").json()["entries"]]
    assert "Session Note E2E" in titles
    back = run(
        st_page,
        "return await dle.req('GET', '/vault/' + dle.enc('Sessions/Session Note E2E.md'),"
        " { accept: 'text/markdown' });",
        [base, key, None],
    )
    assert back["status"] == 200 and back["text"] == note and back["type"].startswith("text/markdown")


def test_a_wrong_key_and_an_escape_are_refused_and_the_page_can_read_why(st_page, dle_in_page, dle):
    base, _ = dle_in_page
    wrong = run(st_page, "return await dle.req('GET', '/vault/');", [base, "not-the-key", None])
    assert wrong["status"] == 401 and '"errorCode":40101' in wrong["text"].replace(" ", "")
    _, key = dle_in_page
    escape = run(
        st_page,
        "return (await dle.req('PUT', '/vault/..%2Foutside.md', { accept: 'text/markdown',"
        " body: 'x', type: 'text/markdown' })).status;",
        [base, key, None],
    )
    assert escape in (400, 403)
    assert not (dle.vault.parent / "outside.md").exists()
    foreign_host = httpx.get(base + "/vault/", headers={"Host": "evil.example", "Authorization": f"Bearer {key}"})
    assert foreign_host.status_code in (400, 403)  # DNS rebinding never reaches the files
