// The bridge's first commands: why the last generation's lore, the lore this chat gets now, the
// connection, a vault re-read, pins and blocks by title, and the Author's Notebook.

import { BridgeError, call, chatPath, context, escapeHtml, serverUrl, VERSION } from './api.js';
import { chatWindow, deadlineMs } from './inject.js';
import { hello, state } from './status.js';
import { currentChatId, injectedTable, listHtml, popup, toast, valueText, verdictTable } from './ui.js';

function whyText(injected, verdicts) {
    const lines = [`Injected: ${injected.length ? injected.map(i => i.title ?? i).join(', ') : 'nothing'}`];
    for (const v of verdicts ?? []) lines.push(`${v.title} · ${v.stage} · ${v.outcome} · ${v.reason}`);
    return lines.join('\n');
}

export async function why() {
    const chatId = currentChatId();
    const last = state.last?.chatId === chatId ? state.last : null;
    if (last) {
        const r = last.result;
        const when = new Date(last.at).toLocaleTimeString();
        popup(`<h3>Why this lore? (last generation, ${escapeHtml(when)}, ${Math.round(last.ms)} ms)</h3>`
            + `<p>${r.total_tokens ?? 0} tokens of lore${r.swipe_rollback ? ' · a swipe: the previous generation was rolled back' : ''}`
            + `${r.skipped_reason ? ` · skipped: ${escapeHtml(r.skipped_reason)}` : ''}</p>`
            + injectedTable(r.injected) + listHtml(r.notes) + '<h4>Every entry the pipeline touched</h4>' + verdictTable(r.verdicts));
        return whyText(r.injected ?? [], r.verdicts);
    }
    const { records } = await call('GET', `${chatPath(chatId, 'records')}?limit=1`);
    const record = records?.[0];
    if (!record) {
        popup('<h3>Why this lore?</h3><p>DLE Desktop has no generation on record for this chat yet. Send a message, then ask again.</p>');
        return 'no generation on record for this chat';
    }
    const injected = (record.injected ?? []).map(title => ({ title }));
    popup('<h3>Why this lore? (last generation on record)</h3>'
        + `<p>${record.total_tokens ?? 0} tokens of lore</p>${injectedTable(injected)}`
        + '<h4>Every entry the pipeline touched</h4>' + verdictTable(record.verdicts));
    return whyText(injected, record.verdicts);
}

export function contextHtml(chatState) {
    const fields = Object.entries(chatState.context ?? {});
    const shown = fields.length
        ? `<ul>${fields.map(([k, v]) => `<li><b>${escapeHtml(k)}</b>: ${escapeHtml(valueText(v))}</li>`).join('')}</ul>`
        : '<p><i>No gating context is set for this chat.</i></p>';
    const folders = chatState.folder_filter?.length ? chatState.folder_filter.join(', ') : 'all folders';
    return `${shown}<p>Folder filter: ${escapeHtml(folders)}</p>`;
}

export async function contextNow() {
    const ctx = context();
    const chatId = currentChatId();
    const chat = ctx.chat.filter(m => !m.is_system);
    const [result, chatState] = await Promise.all([
        call('POST', '/api/dle/v1/retrieve', {
            body: { chat_id: chatId, messages: chatWindow(chat), character_name: ctx.name2 || undefined, dry_run: true },
            timeoutMs: Math.max(deadlineMs(), 10000),
        }),
        call('GET', chatPath(chatId)),
    ]);
    const pins = (chatState.pins ?? []).map(p => p.title ?? p);
    const blocks = (chatState.blocks ?? []).map(b => b.title ?? b);
    popup('<h3>Lore for this chat right now (a dry run: nothing is saved)</h3>'
        + injectedTable(result.injected) + listHtml(result.notes)
        + `<h4>Gating context</h4>${contextHtml(chatState)}`
        + `<p>Pinned: ${escapeHtml(pins.join(', ') || 'none')} · Blocked: ${escapeHtml(blocks.join(', ') || 'none')}`
        + ` · Generations so far: ${chatState.generation_count ?? 0}</p>`
        + '<h4>Verdicts</h4>' + verdictTable(result.verdicts));
    return whyText(result.injected ?? [], result.verdicts);
}

export async function status() {
    await hello();
    const s = await call('GET', '/api/dle/v1/status', { timeoutMs: 5000 });
    const vaults = (s.vaults ?? []).map(v => `${v.name}: ${v.entries} entries${v.enabled ? '' : ' (disabled)'}${v.error ? ` · ${v.error}` : ''}`);
    const server = state.server ?? {};
    const lines = [
        `DLE Desktop ${s.version} at ${serverUrl()} · bridge ${VERSION}`
            + (server.bundled_extension_version && server.bundled_extension_version !== VERSION
                ? ` (DLE Desktop ships ${server.bundled_extension_version}: update it from its SillyTavern page)` : ''),
        `${s.entries} entries indexed${s.syncing ? ' (syncing)' : ''}${s.sync_paused ? ' (sync paused)' : ''}`,
        ...vaults,
        `AI search: ${s.ai?.enabled ? `on (${s.ai.mode}, breaker ${s.ai.breaker})` : 'off'} · semantic search: ${s.semantic?.enabled ? 'on' : 'off'}`,
        `Vector routing: ${server.vector_routing ? 'on' : 'off'} · deadline ${deadlineMs()} ms`,
        state.last ? `Last generation: ${state.last.result?.injected?.length ?? 0} entries, ${state.last.result?.total_tokens ?? 0} tokens, ${Math.round(state.last.ms)} ms` : 'No generation yet this session',
        state.lastError ? `Last error: ${state.lastError}` : 'No errors',
    ];
    popup(`<h3>DLE Desktop status</h3>${listHtml(lines)}`);
    return lines.join('\n');
}

export async function refresh() {
    toast('info', 'Re-reading the vault…');
    const r = await call('POST', '/api/dle/v1/sync?force=1', { timeoutMs: 120000 });
    const c = r.changes ?? {};
    const counts = ['added', 'removed', 'modified'].map(k => `${(c[k] ?? []).length ?? c[k]} ${k}`).join(', ');
    const text = `Vault re-read: ${r.entries} entries (${counts}) in ${Number(r.seconds).toFixed(2)} s`;
    toast('success', text);
    return text;
}

export async function findEntry(name) {
    const wanted = String(name ?? '').trim();
    if (!wanted) throw new BridgeError('Name an entry, e.g. /dle-pin Gorduin Wynlar');
    const { entries } = await call('GET', `/api/dle/v1/entries?q=${encodeURIComponent(wanted)}`);
    const exact = (entries ?? []).filter(e => String(e.title).toLowerCase() === wanted.toLowerCase());
    if (!exact.length) throw new BridgeError(`No entry is titled "${wanted}" (titles are matched exactly, ignoring case).`);
    return exact[0];
}

function sameRef(ref, entry) {
    const title = typeof ref === 'string' ? ref : ref?.title;
    const vault = typeof ref === 'string' ? null : ref?.vault;
    return String(title).toLowerCase() === String(entry.title).toLowerCase() && (!vault || vault === entry.vault);
}

/** Pin, unpin, block or unblock `entry` ({title, vault}) in the open chat; the outcome in words. */
export async function setOverride(list, adding, entry) {
    const chatId = currentChatId();
    const current = (await call('GET', chatPath(chatId, list)))[list] ?? [];
    const kept = current.filter(ref => !sameRef(ref, entry));
    const next = adding ? [...kept, { title: entry.title, vault: entry.vault }] : kept;
    if (!adding && kept.length === current.length) {
        const text = `"${entry.title}" was not ${list === 'pins' ? 'pinned' : 'blocked'} in this chat.`;
        toast('info', text);
        return text;
    }
    await call('PUT', chatPath(chatId, list), { body: { [list]: next } });
    const verb = { pins: adding ? 'Pinned' : 'Unpinned', blocks: adding ? 'Blocked' : 'Unblocked' }[list];
    const text = `${verb} "${entry.title}" in this chat.`;
    toast('success', text);
    return text;
}

export function overrideCommand(list, adding) {
    return async (_args, name) => setOverride(list, adding, await findEntry(name));
}

export async function notebook(_args, text) {
    const chatId = currentChatId();
    let value = typeof text === 'string' && text.trim() ? text : null;
    if (value === null) {
        const current = (await call('GET', chatPath(chatId, 'notebook'))).notebook ?? '';
        const { callGenericPopup, POPUP_TYPE } = context();
        const answer = await callGenericPopup('<h3>Author\'s Notebook</h3><p>Injected into every generation of this chat '
            + '(when the notebook is on in DLE Desktop\'s settings).</p>', POPUP_TYPE.INPUT, current, { rows: 12, wide: true, okButton: 'Save' });
        if (typeof answer !== 'string') return 'notebook unchanged';
        value = answer;
    }
    await call('PUT', chatPath(chatId, 'notebook'), { body: { notebook: value } });
    const saved = `Author's Notebook saved (${value.length} characters).`;
    toast('success', saved);
    return saved;
}
