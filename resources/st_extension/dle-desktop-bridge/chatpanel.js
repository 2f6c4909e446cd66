// The panel's "This chat" part: the open chat's gating context, folder filter, pins and blocks,
// the last generation (entries, tokens, share of the lore budget, search mode), and buttons for
// the commands used most. Read from DLE Desktop when the chat changes, after each generation and
// after each steering command.

import { call, chatPath, context, escapeHtml } from './api.js';
import { runCommand } from './commands.js';
import { onChange, state } from './status.js';
import { valueText } from './ui.js';

const ID = 'dle_desktop_bridge_chat';
const BUTTONS = [
    ['dle-context-state', 'Context'], ['dle-set-location', 'Location'], ['dle-set-field', 'Field…'], ['dle-set-folder', 'Folder'],
    ['dle-pins', 'Pins'], ['dle-why', 'Why'], ['dle-browse', 'Browse'], ['dle-analytics', 'Analytics'], ['dle', 'All commands'],
];

let seen = '';
let chatState = null;
let readError = '';

export function chatPanelHtml() {
    const buttons = BUTTONS.map(([name, label]) => `<div class="menu_button dle-desktop-bridge-run" data-command="${name}" title="/${name}">${label}</div>`).join('');
    return `<h4 class="dle-desktop-bridge-heading">This chat</h4><div id="${ID}" class="dle-desktop-bridge-chat" aria-live="polite"></div>`
        + `<div class="flex-container dle-desktop-bridge-buttons">${buttons}</div>`;
}

function chatId() {
    const ctx = context();
    return String(ctx.getCurrentChatId?.() ?? ctx.chatId ?? '');
}

function mode() {
    const ai = state.server?.ai_search;
    const parts = [ai?.enabled ? `AI search (${ai.mode})` : 'keywords only'];
    if (state.server?.semantic_enabled) parts.push('semantic');
    return parts.join(' + ');
}

function lastLine(id) {
    const last = state.last?.chatId === id ? state.last : null;
    if (!last) return 'No generation of this chat since the page loaded.';
    const r = last.result ?? {};
    const tokens = r.total_tokens ?? 0;
    const budget = state.server?.budget_tokens;
    const use = budget ? ` (${Math.round((tokens / budget) * 100)}% of the ${budget}-token budget)` : ' (no budget limit)';
    return `Last generation: ${(r.injected ?? []).length} entries, ${tokens} tokens${use} · ${mode()}`;
}

function render() {
    const box = document.getElementById(ID);
    if (!box) return;
    const id = chatId();
    if (!id) {
        box.innerHTML = '<i>No chat is open.</i>';
        return;
    }
    const lines = [];
    if (readError) lines.push(`<span class="dle-desktop-bridge-error">${escapeHtml(readError)}</span>`);
    if (chatState) {
        const context = Object.entries(chatState.context ?? {}).map(([k, v]) => `${k}: ${valueText(v)}`);
        const names = list => (list ?? []).map(r => r.title ?? r).join(', ') || 'none';
        lines.push(`Context: ${escapeHtml(context.join('; ') || 'none set')}`);
        lines.push(`Folder filter: ${escapeHtml(chatState.folder_filter?.length ? chatState.folder_filter.join(', ') : 'all folders')}`);
        lines.push(`Pinned: ${escapeHtml(names(chatState.pins))} · Blocked: ${escapeHtml(names(chatState.blocks))}`);
    }
    lines.push(escapeHtml(lastLine(id)));
    box.innerHTML = lines.map(l => `<div>${l}</div>`).join('');
}

async function reread() {
    const id = chatId();
    if (!id || !state.connected) {
        chatState = null;
        render();
        return;
    }
    try {
        chatState = await call('GET', chatPath(id), { timeoutMs: 5000 });
        readError = '';
    } catch (error) {
        readError = `Could not read this chat's state: ${error.message}`;
    }
    render();
}

/** Read again only when something that shows here may have changed. */
function maybeReread() {
    const key = [chatId(), state.connected, state.last?.at ?? 0, state.steered ?? 0].join('|');
    if (key === seen) {
        render();
        return;
    }
    seen = key;
    reread();
}

export function mountChatPanel() {
    document.querySelectorAll('.dle-desktop-bridge-run').forEach(button => button.addEventListener('click', () => runCommand(button.dataset.command)));
    onChange(maybeReread);
    const { eventSource, eventTypes } = context();
    const types = eventTypes ?? context().event_types;
    eventSource.on(types.CHAT_CHANGED, () => setTimeout(maybeReread, 0));
    maybeReread();
}
