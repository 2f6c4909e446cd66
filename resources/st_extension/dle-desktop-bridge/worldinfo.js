// /dle-import [folder]: one of SillyTavern's World Info books into DLE Desktop's vault, as DLE's
// /dle-import does (dle-behaviour §5.8), but previewed before anything is written: the user picks
// a book, sees every entry with the note it becomes, its collisions and warnings, and confirms.
// The import is one batch in DLE Desktop's history; the result popup undoes it in one click.

import { BridgeError, call, context, escapeHtml } from './api.js';
import { argText, ask, listHtml, pickList, popup, table, toast } from './ui.js';
import { summarize } from './utilities.js';

const PREVIEW_TIMEOUT_MS = 60_000;
const IMPORT_TIMEOUT_MS = 180_000;
const WORLDINFO = '/api/dle/v1/worldinfo';
const ACTION_WORDS = { create: 'new note', rename: 'new name', skip: 'skipped', overwrite: 'overwrites' };

/** SillyTavern's World Info books by name (1.13+ tells them; 1.12 lists them in its WI editor). */
async function worldNames() {
    const ctx = context();
    if (typeof ctx.getWorldInfoNames === 'function') return ctx.getWorldInfoNames();
    const options = [...document.querySelectorAll('#world_editor_select option')]
        .map(o => o.textContent.trim()).filter(Boolean);
    if (options.length) return options;
    const response = await fetch('/api/settings/get', { method: 'POST', headers: ctx.getRequestHeaders(), body: '{}' });
    const settings = response.ok ? await response.json() : {};
    return Array.isArray(settings.world_names) ? settings.world_names : [];
}

async function pickBook(names) {
    const picked = await ask('<h3>Import a World Info book into DLE Desktop</h3>'
        + '<p>Pick the book (nothing is written before you see the preview):</p>'
        + pickList(names.map(n => ({ value: n, label: escapeHtml(n) }))), '', 'Preview');
    if (picked === null) return null;
    const name = picked.trim();
    if (!names.includes(name)) throw new BridgeError(`SillyTavern has no World Info book named “${name}”.`);
    return name;
}

function rowsTable(rows) {
    return table(['Entry', 'Note', 'Action', 'Warnings'], rows.map(r => [
        escapeHtml(r.title),
        r.path ? `<code>${escapeHtml(r.path)}</code>` : '',
        escapeHtml(ACTION_WORDS[r.action] ?? r.action),
        r.warnings.length || r.kept.length
            ? `${listHtml(r.warnings)}${r.kept.length ? `<i>kept for SillyTavern: ${escapeHtml(r.kept.join(', '))}</i>` : ''}`
            : '',
    ]), 'dle-desktop-bridge-wi-rows');
}

function previewHtml(preview) {
    const c = preview.counts;
    const where = `${escapeHtml(preview.vault)} / ${escapeHtml(preview.folder || '(top folder)')}`;
    const counts = [`${c.create} new`, c.rename ? `${c.rename} renamed (name taken)` : '',
        c.overwrite ? `${c.overwrite} overwritten` : '', c.skip ? `${c.skip} skipped` : ''].filter(Boolean).join(', ');
    const diffs = preview.rows.filter(r => r.diff).map(r => `<details><summary>${escapeHtml(r.path)}</summary>`
        + `<pre>${escapeHtml(r.diff)}</pre></details>`).join('');
    return `<h3>Import “${escapeHtml(preview.book)}” into ${where}</h3>`
        + `<p class="dle-desktop-bridge-wi-summary">${preview.rows.length} entries → ${preview.writes} notes: ${escapeHtml(counts)}</p>`
        + (preview.problems.length ? `<p><b>Problems</b></p>${listHtml(preview.problems)}` : '')
        + (preview.notes.length ? listHtml(preview.notes) : '')
        + rowsTable(preview.rows)
        + diffs;
}

async function confirmImport(html, writes) {
    const { callGenericPopup, POPUP_TYPE, POPUP_RESULT } = context();
    const answer = await callGenericPopup(`<div class="dle-desktop-bridge-popup">${html}</div>`, POPUP_TYPE.CONFIRM, '', {
        wide: true, large: true, allowVerticalScrolling: true, okButton: `Import ${writes} notes`, cancelButton: 'Cancel',
    });
    return answer === (POPUP_RESULT?.AFFIRMATIVE ?? 1) || answer === true;
}

function resultHtml(done) {
    const where = `${escapeHtml(done.vault)} / ${escapeHtml(done.folder || '(top folder)')}`;
    return `<h3>Imported “${escapeHtml(done.book)}”</h3>`
        + `<p class="dle-desktop-bridge-wi-done">${done.written.length} notes written into ${where}`
        + `${done.skipped.length ? `, ${done.skipped.length} skipped` : ''}.</p>`
        + '<p>The whole import is one step in DLE Desktop\'s history: Undo there takes it back, or here:</p>'
        + `<div class="dle-desktop-bridge-picks"><button type="button" class="menu_button dle-desktop-bridge-wi-undo" data-batch="${escapeHtml(done.batch)}">Undo this import</button>`
        + '<button type="button" class="menu_button dle-desktop-bridge-wi-summarize">Summarize the new entries</button></div>'
        + `<p class="dle-desktop-bridge-wi-undone"></p>`
        + (done.problems.length ? listHtml(done.problems) : '');
}

/** /dle-import [folder]: pick a book, preview, import on confirm. */
export async function importBook(_args, value) {
    const folder = argText(value);
    const names = await worldNames();
    if (!names.length) throw new BridgeError('SillyTavern has no World Info books to import.');
    const name = await pickBook(names);
    if (name === null) return '';
    const book = await context().loadWorldInfo(name);
    if (!book || typeof book !== 'object') throw new BridgeError(`SillyTavern could not load the book “${name}”.`);
    const body = { book, name, folder };
    const preview = await call('POST', `${WORLDINFO}/import/preview`, { body, timeoutMs: PREVIEW_TIMEOUT_MS });
    if (preview.writes === 0) {
        popup(`${previewHtml(preview)}<p><b>Nothing to import.</b></p>`);
        return `Nothing to import from ${name}.`;
    }
    if (!await confirmImport(previewHtml(preview), preview.writes)) return 'Import cancelled; nothing was written.';
    const done = await call('POST', `${WORLDINFO}/import`, {
        body: { ...body, confirm: true, digest: preview.digest }, timeoutMs: IMPORT_TIMEOUT_MS,
    });
    const text = `Imported ${done.written.length} notes from ${name} into ${done.vault}${done.folder ? `/${done.folder}` : ''}; `
        + 'Undo is in DLE Desktop\'s history.';
    toast('success', text, { timeOut: 8000 });
    popup(resultHtml(done));
    return text;
}

async function undoImport(button) {
    const said = button.closest('.dle-desktop-bridge-popup')?.querySelector('.dle-desktop-bridge-wi-undone');
    button.disabled = true;
    try {
        const undone = await call('POST', `${WORLDINFO}/import/undo`, { body: { batch: button.dataset.batch }, timeoutMs: 60_000 });
        const left = [...undone.conflicts, ...undone.refused];
        const text = `Undone: ${undone.undone.length} notes removed.${left.length ? ` Left as they are: ${left.join('; ')}` : ''}`;
        if (said) said.textContent = text;
        toast(left.length ? 'warning' : 'success', text);
    } catch (error) {
        button.disabled = false;
        const text = error instanceof BridgeError ? error.message : String(error?.message || error);
        if (said) said.textContent = text;
        toast('error', text);
    }
}

document.addEventListener('click', event => {
    const undo = event.target?.closest?.('.dle-desktop-bridge-wi-undo');
    if (undo) {
        undoImport(undo);
        return;
    }
    if (event.target?.closest?.('.dle-desktop-bridge-wi-summarize')) {
        summarize().catch(error => toast('error', error?.message || String(error)));
    }
});
