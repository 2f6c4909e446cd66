// The lore tools' trail (dle-behaviour §5.4 (a)): when the model searched the vault or flagged lore
// while writing a reply, that reply keeps what it did in extra.deeplore_tool_calls (saved with the
// chat, so it survives a reload) and shows DLE's "Consulted lore vault" dropdown under its text.

import { context, escapeHtml } from './api.js';

const TRAIL = 'dle-desktop-bridge-trail';
const MAX_CALLS = 20;

let pending = []; // this generation's tool calls, until its reply arrives
let pendingChat = '';

function chatIdNow() {
    return String(context().getCurrentChatId?.() ?? '');
}

/** tools.js: a search or flag the model made (what it asked and what came back). */
export function recordToolCall(call) {
    const chatId = chatIdNow();
    if (pendingChat !== chatId) pending = [];
    pendingChat = chatId;
    if (pending.length < MAX_CALLS) pending.push({ ...call, at: Date.now() });
}

/** Set extra[key] on the message and on its swipe's own copy (SillyTavern restores a swipe's extra when it is shown again). */
export function keepOnMessage(message, key, value) {
    message.extra = message.extra && typeof message.extra === 'object' ? message.extra : {};
    message.extra[key] = value;
    const info = Array.isArray(message.swipe_info) ? message.swipe_info[message.swipe_id ?? 0] : null;
    if (info && typeof info === 'object') {
        info.extra = info.extra && typeof info.extra === 'object' ? info.extra : {};
        info.extra[key] = value;
    }
}

function isReply(message) {
    return !!message && !message.is_user && !message.is_system && !Array.isArray(message.extra?.tool_invocations);
}

/** MESSAGE_RECEIVED: the reply the calls were made for keeps them. */
async function replyReceived(id, type) {
    if (!pending.length || type === 'first_message') return;
    const message = (context().chat ?? [])[Number(id)];
    if (!isReply(message) || pendingChat !== chatIdNow()) return;
    keepOnMessage(message, 'deeplore_tool_calls', pending);
    pending = [];
}

function quoted(items) {
    return (items ?? []).map(q => `“${escapeHtml(q)}”`).join(', ');
}

function line(call) {
    if (call.tool === 'flag') {
        const what = call.flag_type === 'update' ? `an update to <b>${escapeHtml(call.entry_title || call.title)}</b>` : `<b>${escapeHtml(call.title)}</b> as missing`;
        return `<li><i class="fa-solid fa-flag"></i> Flagged ${what} (${escapeHtml(call.urgency || 'medium')} urgency)`
            + `${call.reason ? `: ${escapeHtml(call.reason)}` : ''}${call.error ? ` · <i>failed: ${escapeHtml(call.error)}</i>` : ''}</li>`;
    }
    const parts = [];
    if (call.found) parts.push(`found <b>${escapeHtml(call.found)}</b>`);
    if (call.linked?.length) parts.push(`linked ${call.linked.map(escapeHtml).join(', ')}`);
    if (call.misses?.length) parts.push(`nothing about ${quoted(call.misses)} (noted as a gap)`);
    if (call.error) parts.push(`<i>failed: ${escapeHtml(call.error)}</i>`);
    if (!parts.length) parts.push('nothing beyond the lore already in the prompt');
    return `<li><i class="fa-solid fa-magnifying-glass"></i> Searched ${quoted(call.queries)}: ${parts.join('; ')}</li>`;
}

function summaryOf(calls) {
    const searches = calls.filter(c => c.tool !== 'flag').length;
    const flags = calls.length - searches;
    const bits = [];
    if (searches) bits.push(`${searches} ${searches === 1 ? 'search' : 'searches'}`);
    if (flags) bits.push(`${flags} ${flags === 1 ? 'flag' : 'flags'}`);
    return bits.join(', ');
}

function decorate(node) {
    const message = (context().chat ?? [])[Number(node.getAttribute('mesid'))];
    const calls = message?.extra?.deeplore_tool_calls;
    const existing = node.querySelector(`.${TRAIL}`);
    if (!Array.isArray(calls) || !calls.length) {
        existing?.remove();
        return;
    }
    const stamp = String(calls.length) + String(calls[calls.length - 1]?.at ?? '');
    if (existing?.dataset.stamp === stamp) return;
    existing?.remove();
    const text = node.querySelector('.mes_text');
    if (!text) return;
    text.insertAdjacentHTML('afterend', `<details class="${TRAIL}" data-stamp="${escapeHtml(stamp)}">`
        + `<summary>Consulted lore vault · ${summaryOf(calls)}</summary><ul>${calls.map(line).join('')}</ul></details>`);
}

function decorateId(id) {
    const node = document.querySelector(`#chat .mes[mesid="${Number(id)}"]`);
    if (node) decorate(node);
}

function decorateAll() {
    document.querySelectorAll('#chat .mes[mesid]').forEach(decorate);
}

async function replyShown(id) {
    const message = context().chat?.[Number(id)];
    decorateId(id);
    if (message?.extra?.deeplore_tool_calls?.length) {
        try { await context().saveChat?.(); } catch { /* SillyTavern saves the chat itself soon */ }
    }
}

export function installTrail() {
    const { eventSource, eventTypes } = context();
    const types = eventTypes ?? context().event_types;
    eventSource.on(types.MESSAGE_RECEIVED, replyReceived);
    eventSource.on(types.CHARACTER_MESSAGE_RENDERED, replyShown);
    for (const type of ['MESSAGE_SWIPED', 'MESSAGE_UPDATED', 'MESSAGE_EDITED']) {
        if (types[type]) eventSource.on(types[type], id => setTimeout(() => decorateId(id), 0));
    }
    eventSource.on(types.CHAT_CHANGED, () => {
        pending = [];
        setTimeout(decorateAll, 0);
    });
    if (types.MORE_MESSAGES_LOADED) eventSource.on(types.MORE_MESSAGES_LOADED, decorateAll);
    const chat = document.getElementById('chat');
    if (chat) new MutationObserver(() => decorateAll()).observe(chat, { childList: true });
    decorateAll();
}

export function pendingToolCalls() {
    return [...pending];
}
