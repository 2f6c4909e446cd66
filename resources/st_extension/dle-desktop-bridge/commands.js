// Slash commands with DeepLore Enhanced's names, so its users' habits carry over. Each command
// returns text (for /pipe and scripts) and, where there is something to read, opens a popup.

import { BridgeError, call, chatPath, context, escapeHtml, serverUrl, VERSION } from './api.js';
import { chatWindow, deadlineMs } from './inject.js';
import { hello, state } from './status.js';

const POSITION_NAMES = { '-1': 'outlet', 0: 'in prompt', 1: 'in chat', 2: 'before prompt' };
const ROLE_NAMES = { 0: 'system', 1: 'user', 2: 'assistant' };

function toast(kind, text) {
    globalThis.toastr?.[kind]?.(text, 'DLE Desktop');
}

function popup(html) {
    const { callGenericPopup, POPUP_TYPE } = context();
    const body = `<div class="dle-desktop-bridge-popup">${html}</div>`;
    if (typeof callGenericPopup === 'function') {
        callGenericPopup(body, POPUP_TYPE.TEXT, '', { wide: true, large: true, allowVerticalScrolling: true, okButton: 'Close' });
    } else {
        context().callPopup?.(body, 'text');
    }
}

function currentChatId() {
    const ctx = context();
    const id = ctx.getCurrentChatId?.() ?? ctx.chatId;
    if (!id) throw new BridgeError('No chat is open.');
    return String(id);
}

async function guarded(name, work) {
    try {
        return await work();
    } catch (error) {
        const message = error instanceof BridgeError ? error.message : `${name} failed: ${error?.message || error}`;
        toast('error', message);
        return message;
    }
}

function placeText(item) {
    const where = POSITION_NAMES[item.position] ?? `position ${item.position}`;
    return item.position === 1 ? `${where} @ depth ${item.depth}, ${ROLE_NAMES[item.role] ?? item.role}`
        : `${where}, ${ROLE_NAMES[item.role] ?? item.role}`;
}

function injectedTable(injected) {
    if (!injected?.length) return '<p><i>No entry was injected.</i></p>';
    const rows = injected.map(i => `<tr><td>${escapeHtml(i.title)}</td><td>${escapeHtml(i.matched_by ?? '')}</td>`
        + `<td>${i.tokens ?? ''}${i.truncated ? ' (cut)' : ''}</td><td>${escapeHtml(placeText(i))}</td></tr>`).join('');
    return `<table class="dle-desktop-bridge-table"><tr><th>Entry</th><th>Matched by</th><th>Tokens</th><th>Placed</th></tr>${rows}</table>`;
}

function verdictTable(verdicts) {
    if (!verdicts?.length) return '<p><i>No verdicts.</i></p>';
    const rows = verdicts.map(v => `<tr class="dle-outcome-${escapeHtml(v.outcome)}"><td>${escapeHtml(v.title)}</td>`
        + `<td>${escapeHtml(v.stage)}</td><td>${escapeHtml(v.outcome)}</td><td>${escapeHtml(v.reason)}</td></tr>`).join('');
    return `<table class="dle-desktop-bridge-table"><tr><th>Entry</th><th>Stage</th><th>Outcome</th><th>Why</th></tr>${rows}</table>`;
}

function notesHtml(notes) {
    return notes?.length ? `<ul>${notes.map(n => `<li>${escapeHtml(n)}</li>`).join('')}</ul>` : '';
}

function whyText(injected, verdicts) {
    const lines = [`Injected: ${injected.length ? injected.map(i => i.title ?? i).join(', ') : 'nothing'}`];
    for (const v of verdicts ?? []) lines.push(`${v.title} · ${v.stage} · ${v.outcome} · ${v.reason}`);
    return lines.join('\n');
}

async function why() {
    const chatId = currentChatId();
    const last = state.last?.chatId === chatId ? state.last : null;
    if (last) {
        const r = last.result;
        const when = new Date(last.at).toLocaleTimeString();
        popup(`<h3>Why this lore? (last generation, ${escapeHtml(when)}, ${Math.round(last.ms)} ms)</h3>`
            + `<p>${r.total_tokens ?? 0} tokens of lore${r.swipe_rollback ? ' · a swipe: the previous generation was rolled back' : ''}`
            + `${r.skipped_reason ? ` · skipped: ${escapeHtml(r.skipped_reason)}` : ''}</p>`
            + injectedTable(r.injected) + notesHtml(r.notes) + '<h4>Every entry the pipeline touched</h4>' + verdictTable(r.verdicts));
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
        + `<p>${record.total_tokens ?? 0} tokens of lore</p>${injectedTable(injected.length ? injected.map(i => ({ ...i, position: '', role: '' })) : [])}`
        + '<h4>Every entry the pipeline touched</h4>' + verdictTable(record.verdicts));
    return whyText(injected, record.verdicts);
}

async function contextNow() {
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
    const fields = Object.entries(chatState.context ?? {});
    const contextHtml = fields.length
        ? `<ul>${fields.map(([k, v]) => `<li><b>${escapeHtml(k)}</b>: ${escapeHtml(Array.isArray(v) ? v.join(', ') : v)}</li>`).join('')}</ul>`
        : '<p><i>No gating context is set for this chat.</i></p>';
    const pins = (chatState.pins ?? []).map(p => p.title ?? p);
    const blocks = (chatState.blocks ?? []).map(b => b.title ?? b);
    popup('<h3>Lore for this chat right now (a dry run: nothing is saved)</h3>'
        + injectedTable(result.injected) + notesHtml(result.notes)
        + `<h4>Gating context</h4>${contextHtml}`
        + `<p>Pinned: ${escapeHtml(pins.join(', ') || 'none')} · Blocked: ${escapeHtml(blocks.join(', ') || 'none')}`
        + ` · Generations so far: ${chatState.generation_count ?? 0}</p>`
        + '<h4>Verdicts</h4>' + verdictTable(result.verdicts));
    return whyText(result.injected ?? [], result.verdicts);
}

async function status() {
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
    popup(`<h3>DLE Desktop status</h3><ul>${lines.map(l => `<li>${escapeHtml(l)}</li>`).join('')}</ul>`);
    return lines.join('\n');
}

async function refresh() {
    toast('info', 'Re-reading the vault…');
    const r = await call('POST', '/api/dle/v1/sync?force=1', { timeoutMs: 120000 });
    const c = r.changes ?? {};
    const counts = ['added', 'removed', 'modified'].map(k => `${(c[k] ?? []).length ?? c[k]} ${k}`).join(', ');
    const text = `Vault re-read: ${r.entries} entries (${counts}) in ${Number(r.seconds).toFixed(2)} s`;
    toast('success', text);
    return text;
}

async function findEntry(name) {
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

function overrideCommand(list, adding) {
    return async (_args, name) => {
        const entry = await findEntry(name);
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
    };
}

async function notebook(_args, text) {
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

const COMMANDS = [
    { name: 'dle-why', help: 'Why did this lore reach the prompt? The decision record of the last generation.', run: why, aliases: ['dle-inspect'] },
    { name: 'dle-context', help: 'What lore this chat gets right now (a dry run), its gating context, pins and blocks.', run: contextNow },
    { name: 'dle-status', help: 'DLE Desktop: connection, index, AI search, last error.', run: status },
    { name: 'dle-refresh', help: 'Re-read the whole vault in DLE Desktop now.', run: refresh, aliases: ['dle-r'] },
    { name: 'dle-pin', help: 'Always inject an entry in this chat: /dle-pin <entry title>', run: overrideCommand('pins', true), arg: true },
    { name: 'dle-unpin', help: 'Undo /dle-pin: /dle-unpin <entry title>', run: overrideCommand('pins', false), arg: true },
    { name: 'dle-block', help: 'Never inject an entry in this chat: /dle-block <entry title>', run: overrideCommand('blocks', true), arg: true },
    { name: 'dle-unblock', help: 'Undo /dle-block: /dle-unblock <entry title>', run: overrideCommand('blocks', false), arg: true },
    { name: 'dle-notebook', help: 'Edit this chat\'s Author\'s Notebook (or set it: /dle-notebook <text>).', run: notebook, arg: true, optional: true },
];

export function registerCommands() {
    const ctx = context();
    const { SlashCommandParser, SlashCommand, SlashCommandArgument, ARGUMENT_TYPE } = ctx;
    for (const command of COMMANDS) {
        const callback = (args, value) => guarded(command.name, () => command.run(args, value));
        if (SlashCommandParser?.addCommandObject && SlashCommand?.fromProps) {
            SlashCommandParser.addCommandObject(SlashCommand.fromProps({
                name: command.name,
                aliases: command.aliases ?? [],
                callback,
                returns: 'text',
                helpString: command.help,
                unnamedArgumentList: command.arg ? [SlashCommandArgument.fromProps({
                    description: command.optional ? 'text' : 'entry title',
                    typeList: [ARGUMENT_TYPE.STRING],
                    isRequired: !command.optional,
                })] : [],
            }));
        } else {
            ctx.registerSlashCommand?.(command.name, callback, command.aliases ?? [], command.help, true, true);
        }
    }
}

export const commandNames = COMMANDS.map(c => c.name);
