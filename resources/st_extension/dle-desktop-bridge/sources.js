// "Which lore shaped this reply" (DeepLore Enhanced's Context Cartographer): each generation's
// decision record is tied to the reply it wrote (message and swipe) in DLE Desktop, and each AI
// message gets a button that reads it back from there, so it follows swipes and survives a page
// reload. Also the lore-share warning: lore over 20 % of the context size gets one notice, again
// only when the share has moved by 5 points (or fallen under 20 % and come back).

import { BridgeError, call, chatPath, context, escapeHtml } from './api.js';
import { currentChatId, placeText, popup, table, toast } from './ui.js';

const BUTTON = 'dle-desktop-bridge-sources-button';
const SHARE_LIMIT = 20;
const SHARE_STEP = 5;
const PENDING_MS = 10 * 60 * 1000;

let pending = null; // {chatId, record, at}: the last generation's record, until its reply arrives
let warnedShare = null;

export const linked = []; // {chatId, message, swipe, record}, newest last (for the console and the tests)

export function contextSize() {
    const ctx = context();
    const chatCompletion = Number(ctx.chatCompletionSettings?.openai_max_context);
    if (ctx.mainApi === 'openai' && chatCompletion > 0) return chatCompletion;
    return Number(ctx.maxContext) || 0;
}

function warnShare(result) {
    const size = contextSize();
    const tokens = Number(result?.total_tokens) || 0;
    if (!size || !tokens) return;
    const share = (tokens / size) * 100;
    if (share <= SHARE_LIMIT) {
        warnedShare = null;
        return;
    }
    if (warnedShare !== null && Math.abs(share - warnedShare) < SHARE_STEP) return;
    warnedShare = share;
    toast('warning', `Lore takes ${Math.round(share)}% of the context (${tokens} of ${size} tokens). `
        + 'Lower the budget in DLE Desktop, or steer with /dle-set-folder and /dle-set-field.', { timeOut: 10000 });
}

/** The interceptor got a generation's lore: remember its record for the reply that follows. */
export function generationDecided(chatId, result) {
    pending = Number.isInteger(result?.record) ? { chatId, record: result.record, at: Date.now() } : null;
    warnShare(result);
}

export function forgetPending() {
    pending = null;
}

function swipeOf(message) {
    return Number.isInteger(message?.swipe_id) && message.swipe_id >= 0 ? message.swipe_id : 0;
}

function isReply(message) {
    return !!message && !message.is_user && !message.is_system;
}

async function replyArrived(id, type) {
    const messageId = Number(id);
    const chat = context().chat ?? [];
    const message = chat[messageId];
    addButton(messageId);
    if (type === 'first_message' || !isReply(message) || !pending) return;
    const chatId = String(context().getCurrentChatId?.() ?? '');
    const { record, at } = pending;
    if (pending.chatId !== chatId || Date.now() - at > PENDING_MS) return;
    pending = null;
    const swipe = swipeOf(message);
    try {
        await call('PUT', chatPath(chatId, 'sources'), { body: { message: messageId, swipe, record }, timeoutMs: 5000 });
        linked.push({ chatId, message: messageId, swipe, record });
        if (linked.length > 50) linked.shift();
    } catch (error) {
        console.warn('[DLE Desktop bridge] could not tie the lore to its reply', error);
    }
}

function addButton(messageId) {
    const node = document.querySelector(`#chat .mes[mesid="${messageId}"]`);
    if (node) decorate(node);
}

function decorate(node) {
    const message = (context().chat ?? [])[Number(node.getAttribute('mesid'))];
    const box = node.querySelector('.extraMesButtons');
    if (!box || box.querySelector(`.${BUTTON}`) || !isReply(message)) return;
    box.insertAdjacentHTML('afterbegin', `<div class="mes_button ${BUTTON} fa-solid fa-book-atlas" `
        + 'title="Which lore shaped this reply (DLE Desktop)" tabindex="0" role="button"></div>');
}

function decorateAll() {
    document.querySelectorAll('#chat .mes[mesid]').forEach(decorate);
}

function changesHtml(changes) {
    if (!changes) return '<p><i>The first reply of this chat on record: nothing to compare with.</i></p>';
    const names = list => escapeHtml(list?.length ? list.join(', ') : 'none');
    return `<p>Against the reply before: <b>added</b> ${names(changes.added)} · <b>dropped</b> ${names(changes.dropped)}</p>`;
}

export async function showSources(messageId) {
    const chatId = currentChatId();
    const message = (context().chat ?? [])[messageId];
    const swipe = swipeOf(message);
    let data;
    try {
        data = await call('GET', `${chatPath(chatId, 'sources')}?message=${messageId}&swipe=${swipe}`);
    } catch (error) {
        if (error instanceof BridgeError && error.status === 404) {
            const text = `DLE Desktop has no lore on record for message ${messageId} (swipe ${swipe}): `
                + 'it was written without the bridge, before it kept sources, or its chat was reset.';
            popup(`<h3>Lore behind this reply</h3><p>${escapeHtml(text)}</p>`);
            return text;
        }
        throw error;
    }
    const sources = data.sources ?? [];
    const rows = sources.map(s => [escapeHtml(s.title), escapeHtml(s.vault), escapeHtml(s.matched_by ?? ''),
        s.truncated ? `${s.tokens} of ${s.original_tokens} (cut)` : String(s.tokens ?? ''), escapeHtml(placeText(s))]);
    const removed = (data.verdicts ?? []).filter(v => v.outcome !== 'injected');
    popup(`<h3>Lore behind message ${messageId}, swipe ${swipe + 1}</h3>`
        + `<p>${sources.length} entries, ${data.total_tokens ?? 0} tokens · generation ${data.gen ?? '?'}`
        + `${data.generated_at ? `, ${new Date(data.generated_at * 1000).toLocaleString()}` : ''}</p>`
        + (rows.length ? table(['Entry', 'Vault', 'Matched by', 'Tokens', 'Position'], rows, 'dle-desktop-bridge-sources')
            : '<p><i>No lore was injected into this reply.</i></p>')
        + changesHtml(data.changes)
        + (data.semantic_query ? `<p><small>Semantic search asked: ${escapeHtml(data.semantic_query)}</small></p>` : '')
        + (removed.length ? `<details><summary>${removed.length} entries held back</summary>${table(['Entry', 'Stage', 'Why'],
            removed.map(v => [escapeHtml(v.title), escapeHtml(v.stage), escapeHtml(v.reason)]))}</details>` : ''));
    return sources.map(s => s.title).join(', ') || 'no lore';
}

document.addEventListener('click', event => {
    const button = event.target?.closest?.(`.${BUTTON}`);
    if (!button) return;
    const id = Number(button.closest('.mes')?.getAttribute('mesid'));
    if (!Number.isInteger(id)) return;
    showSources(id).catch(error => toast('error', error.message || String(error)));
});

export function installSources() {
    const { eventSource, eventTypes } = context();
    const types = eventTypes ?? context().event_types;
    eventSource.on(types.MESSAGE_RECEIVED, replyArrived);
    for (const type of ['CHARACTER_MESSAGE_RENDERED', 'MESSAGE_SWIPED', 'MESSAGE_UPDATED']) {
        if (types[type]) eventSource.on(types[type], id => addButton(Number(id)));
    }
    eventSource.on(types.CHAT_CHANGED, () => {
        pending = null;
        setTimeout(decorateAll, 0);
    });
    if (types.MORE_MESSAGES_LOADED) eventSource.on(types.MORE_MESSAGES_LOADED, decorateAll);
    // Whatever (re)draws a message (a chat opening, an edit, more history), its button comes back.
    const chat = document.getElementById('chat');
    if (chat) new MutationObserver(() => decorateAll()).observe(chat, { childList: true });
    decorateAll();
}
