// Looking at the lore from SillyTavern: analytics (a sortable table and the entries that never
// fire), a keyword replay of the chat, the vault's health and the notes the parser skipped, the
// index and AI cache, a searchable entry browser with pin/block, the last generation's trace
// with stage timings, and the app's Graph and Librarian views brought to the front.

import { BridgeError, call, context, escapeHtml } from './api.js';
import { findEntry, setOverride } from './basics.js';
import { chatWindow } from './inject.js';
import { state } from './status.js';
import { argText, currentChatId, injectedTable, listHtml, popup, table, toast, verdictTable } from './ui.js';

function when(seconds) {
    return seconds ? new Date(seconds * 1000).toLocaleString() : 'never';
}

function sortCell(value, shown = escapeHtml(value)) {
    return `<span data-sort="${escapeHtml(value)}">${shown}</span>`;
}

/** Click a header of a sortable table: its rows sorted by that column (again: the other way). */
document.addEventListener('click', event => {
    const th = event.target?.closest?.('.dle-desktop-bridge-sortable th');
    if (!th) return;
    const tableNode = th.closest('table');
    const column = [...th.parentNode.children].indexOf(th);
    const descending = th.dataset.order !== 'desc';
    tableNode.querySelectorAll('th').forEach(h => delete h.dataset.order);
    th.dataset.order = descending ? 'desc' : 'asc';
    const key = row => row.children[column]?.querySelector('[data-sort]')?.dataset.sort ?? row.children[column]?.innerText ?? '';
    const body = tableNode.tBodies[0];
    const rows = [...body.rows].sort((a, b) => {
        const [x, y] = [key(a), key(b)];
        const both = x !== '' && y !== '' && !Number.isNaN(Number(x)) && !Number.isNaN(Number(y));
        const order = both ? Number(x) - Number(y) : x.localeCompare(y, undefined, { sensitivity: 'base' });
        return descending ? -order : order;
    });
    rows.forEach(r => body.appendChild(r));
});

export async function analytics() {
    const chatId = currentChatId();
    const data = await call('GET', `/api/dle/v1/analytics?chat_id=${encodeURIComponent(chatId)}`);
    const entries = data.entries ?? [];
    const rows = entries.map(e => [
        sortCell(e.title), sortCell(e.vault), sortCell(e.injected), sortCell(e.matched),
        sortCell(e.chat?.injected ?? 0), sortCell(e.chat?.matched ?? 0),
        sortCell(e.last_injected_at ?? 0, escapeHtml(when(e.last_injected_at))),
    ]);
    const never = entries.filter(e => !e.injected).map(e => e.title);
    popup(`<h3>Lore analytics</h3><p>${entries.length} entries · ${data.chats ?? 0} chats on record · `
        + `${data.never_injected ?? never.length} never injected. Click a header to sort.</p>`
        + table(['Entry', 'Vault', 'Injected', 'Matched', 'Injected here', 'Matched here', 'Last injected'], rows,
            'dle-desktop-bridge-sortable dle-desktop-bridge-analytics')
        + `<h4>Never injected</h4>${never.length ? `<div class="dle-desktop-bridge-never">${listHtml(never)}</div>`
            : '<p><i>Every entry has been injected at least once.</i></p>'}`);
    const lines = entries.map(e => `${e.title}: injected ${e.injected} (here ${e.chat?.injected ?? 0}), matched ${e.matched}`);
    return [...lines, `Never injected: ${never.join(', ') || 'none'}`].join('\n');
}

export async function simulate() {
    const ctx = context();
    const chat = (ctx.chat ?? []).filter(m => !m.is_system);
    if (!chat.length) throw new BridgeError('This chat has no messages to replay.');
    const data = await call('POST', '/api/dle/v1/simulate', {
        body: { chat_id: currentChatId(), messages: chatWindow(chat), character_name: ctx.name2 || undefined }, timeoutMs: 60000,
    });
    const names = list => escapeHtml((list ?? []).join(', ') || '—');
    const rows = (data.steps ?? []).map(s => [String(s.message), escapeHtml(s.speaker ?? (s.is_user ? 'user' : 'character')),
        names(s.added), names(s.dropped), String((s.injected ?? []).length), String(s.total_tokens ?? 0)]);
    popup(`<h3>Keyword replay of this chat</h3><p>${data.simulated ?? rows.length} of ${data.messages ?? chat.length} messages replayed with `
        + 'keywords only (no AI search), this chat\'s gating, pins and blocks. Nothing is saved.</p>'
        + table(['#', 'Speaker', 'Added', 'Dropped', 'Entries', 'Tokens'], rows));
    return (data.steps ?? []).map(s => `#${s.message}: +${(s.added ?? []).join(', ') || '—'} -${(s.dropped ?? []).join(', ') || '—'}`).join('\n');
}

export async function health() {
    const report = await call('GET', '/api/dle/v1/health');
    const section = (title, items) => `<h4>${title} (${items.length})</h4>`
        + (items.length ? listHtml(items.map(f => `${f.entry ? `${f.entry}: ` : ''}${f.message}`)) : '<p><i>none</i></p>');
    const [errors, warnings, info] = [report.errors ?? [], report.warnings ?? [], report.info ?? []];
    popup('<h3>Vault health</h3>' + section('Errors', errors) + section('Warnings', warnings) + section('Notes', info));
    return `${errors.length} errors, ${warnings.length} warnings, ${info.length} notes`
        + [...errors, ...warnings].map(f => `\n${f.entry ? `${f.entry}: ` : ''}${f.message}`).join('');
}

export async function lint() {
    const data = await call('GET', '/api/dle/v1/skipped');
    const skipped = data.skipped ?? [];
    const rows = skipped.map(s => [escapeHtml(`${s.vault}: ${s.path}${s.line ? `:${s.line}` : ''}`), escapeHtml(s.code), escapeHtml(s.reason)]);
    popup('<h3>Parser warnings and skipped notes</h3>'
        + `<h4>Warnings (${(data.warnings ?? []).length})</h4>${listHtml(data.warnings) || '<p><i>none</i></p>'}`
        + `<h4>Skipped notes (${skipped.length})</h4>${rows.length ? table(['Note', 'Code', 'Why'], rows) : '<p><i>none</i></p>'}`);
    return `${(data.warnings ?? []).length} warnings, ${skipped.length} skipped notes`
        + skipped.map(s => `\n${s.path}: ${s.reason}`).join('');
}

export async function cacheInfo(_args, raw) {
    const chatId = currentChatId();
    const word = argText(raw).toLowerCase();
    if (word && word !== 'clear') throw new BridgeError(`/dle-cache-info takes nothing or "clear", not "${word}". Nothing was changed.`);
    if (word === 'clear') {
        await call('POST', `/api/dle/v1/ai/cache/clear?chat_id=${encodeURIComponent(chatId)}`);
        const text = 'AI search answers cached for this chat cleared: the next generation asks the AI again.';
        toast('success', text);
        return text;
    }
    const [s, ai] = await Promise.all([call('GET', '/api/dle/v1/status', { timeoutMs: 5000 }), call('GET', '/api/dle/v1/ai')]);
    const lines = [
        `Index: ${s.entries} entries, version ${s.index_version ?? '—'}, built ${s.index_built_at ? when(s.index_built_at) : 'not yet'}`
            + `${s.syncing ? ' (syncing)' : ''}${s.sync_paused ? ' (sync paused)' : ''}; ${s.skipped ?? 0} notes skipped`,
        `AI search: ${s.ai?.enabled ? `on (${s.ai.mode})` : 'off'}; breaker ${ai.breaker?.state ?? s.ai?.breaker ?? '—'}${ai.offline ? '; offline' : ''}`,
        `Semantic search: ${s.semantic?.enabled ? 'on' : 'off'}${s.semantic?.query_cache_hits !== undefined
            ? ` (query cache: ${s.semantic.query_cache_hits} hits, ${s.semantic.query_cache_misses} misses)` : ''}`,
        ...Object.entries(ai.channels ?? {}).map(([name, c]) => `${c.label || name}: ${c.mode}${c.model ? `, ${c.model}` : ''}${c.problem ? ` (${c.problem})` : ''}`),
    ];
    popup(`<h3>Index and AI cache</h3>${listHtml(lines)}<p><small>/dle-cache-info clear forgets the AI's cached answers for this chat.</small></p>`);
    return lines.join('\n');
}

let browsed = [];

function browseRows(query) {
    const q = query.trim().toLowerCase();
    const hits = browsed.filter(e => !q || e.title.toLowerCase().includes(q) || (e.keys ?? []).some(k => k.toLowerCase().includes(q)));
    if (!hits.length) return '<p><i>No entry matches.</i></p>';
    return table(['Entry', 'Vault', 'Keys', ''], hits.slice(0, 300).map(e => [escapeHtml(e.title), escapeHtml(e.vault),
        escapeHtml((e.keys ?? []).join(', ')),
        ['pins', 'blocks'].map(list => `<button type="button" class="menu_button dle-desktop-bridge-override" data-list="${list}" `
            + `data-title="${escapeHtml(e.title)}" data-vault="${escapeHtml(e.vault)}">${list === 'pins' ? 'Pin' : 'Block'}</button>`).join(' ')]));
}

document.addEventListener('input', event => {
    if (!event.target?.classList?.contains('dle-desktop-bridge-browse-q')) return;
    const box = event.target.closest('.dle-desktop-bridge-popup')?.querySelector('.dle-desktop-bridge-browse-list');
    if (box) box.innerHTML = browseRows(event.target.value);
});

document.addEventListener('click', event => {
    const button = event.target?.closest?.('.dle-desktop-bridge-override');
    if (!button) return;
    const { list, title, vault } = button.dataset;
    setOverride(list, true, { title, vault }).catch(error => toast('error', error.message));
});

export async function browse(_args, raw) {
    const query = argText(raw);
    browsed = (await call('GET', '/api/dle/v1/entries')).entries ?? [];
    popup(`<h3>Browse the vault (${browsed.length} entries)</h3>`
        + `<input type="search" class="text_pole dle-desktop-bridge-browse-q" placeholder="Search titles and keys" value="${escapeHtml(query)}">`
        + `<div class="dle-desktop-bridge-browse-list">${browseRows(query)}</div>`);
    return `${browsed.length} entries`;
}

export async function inspect() {
    const chatId = currentChatId();
    const last = state.last?.chatId === chatId ? state.last : null;
    if (!last) {
        popup('<h3>Last generation</h3><p>No generation of this chat has run since this page loaded. Send a message, '
            + 'then ask again (/dle-why shows the last one DLE Desktop keeps on record).</p>');
        return 'no generation of this chat since the page loaded';
    }
    const r = last.result ?? {};
    const timings = Object.entries(r.timings_ms ?? {});
    const timingRows = timings.map(([stage, ms]) => [escapeHtml(stage), typeof ms === 'number' ? ms.toFixed(1) : escapeHtml(String(ms))]);
    popup(`<h3>Last generation (${escapeHtml(last.type)}, ${new Date(last.at).toLocaleTimeString()})</h3>`
        + `<p>${(r.injected ?? []).length} entries, ${r.total_tokens ?? 0} tokens · ${Math.round(last.ms)} ms round trip`
        + `${r.record ? ` · decision record ${r.record}` : ''}${r.semantic_query ? ` · semantic query: ${escapeHtml(r.semantic_query)}` : ''}</p>`
        + injectedTable(r.injected) + listHtml(r.notes)
        + `<h4>Stage timings (ms)</h4>${timingRows.length ? table(['Stage', 'ms'], timingRows) : '<p><i>none</i></p>'}`
        + '<h4>Trace</h4>' + verdictTable(r.verdicts));
    return [`${(r.injected ?? []).length} entries, ${r.total_tokens ?? 0} tokens`,
        ...timings.map(([stage, ms]) => `${stage}: ${ms} ms`)].join('\n');
}

async function show(body, what) {
    try {
        await call('POST', '/api/dle/v1/app/show', { body });
    } catch (error) {
        if (error instanceof BridgeError && error.status === 409) {
            throw new BridgeError(`DLE Desktop cannot show ${what}: ${error.said || error.message}`);
        }
        throw error;
    }
    const text = `DLE Desktop shows ${what}.`;
    toast('success', text);
    return text;
}

export async function graph(_args, raw) {
    const name = argText(raw);
    if (!name) return show({ view: 'graph' }, 'its Graph view');
    const entry = await findEntry(name);
    return show({ view: 'graph', entry: entry.title }, `"${entry.title}" in its Graph view`);
}

export async function librarian(_args, raw) {
    const words = argText(raw).split(/\s+/).filter(Boolean);
    const [first, ...rest] = words.map(w => w.toLowerCase());
    if (!first) return show({ view: 'librarian' }, 'its Librarian');
    if (first === 'review' || first === 'audit') {
        if (rest.length) throw new BridgeError(`/dle-librarian ${first} takes nothing more. Nothing was shown.`);
        return show({ view: 'librarian', mode: first }, `its Librarian (${first})`);
    }
    if (first === 'gap') {
        const gap = words.slice(1).join(' ');
        if (!gap) throw new BridgeError('Name the gap: /dle-librarian gap <id>.');
        return show({ view: 'librarian', gap }, `gap ${gap} in its Librarian`);
    }
    throw new BridgeError(`/dle-librarian takes "gap <id>", "review" or "audit", not "${words.join(' ')}". Nothing was shown.`);
}
