// Semantic prefetch: on a CPU, embedding the chat's newest messages is the slow part of a
// generation's lookup. The newest messages of a chat are sent to DLE Desktop when the chat opens,
// the character's reply as soon as it arrives, and the user's message while it is typed (after a
// pause), so the embeddings are ready when the next generation asks. Best effort: a failure costs
// nothing but the cache hit.

import { call, context, settings } from './api.js';
import { state } from './status.js';

const TYPING_PAUSE_MS = 700;
const MIN_DRAFT_CHARS = 12;
let typingTimer = null;
let lastSent = '';

function wanted() {
    return settings().enabled !== false && state.server?.semantic_enabled === true;
}

export function prefetch(texts) {
    const messages = texts.filter(t => typeof t === 'string' && t.trim()).slice(-4);
    if (!wanted() || !messages.length) return;
    const key = messages.join('\u0000');
    if (key === lastSent) return;
    lastSent = key;
    call('POST', '/api/dle/v1/semantic/prefetch', { body: { messages }, timeoutMs: 3000 })
        .catch(() => { /* the generation embeds them itself */ });
}

function replyArrived(index) {
    const chat = context().chat ?? [];
    const message = chat[Number.isInteger(index) ? index : chat.length - 1];
    if (message && !message.is_user && !message.is_system) prefetch([message.mes]);
}

/** A chat just opened: its newest messages are the next generation's window. */
function chatOpened() {
    const chat = context().chat ?? [];
    prefetch(chat.filter(m => m && !m.is_system).slice(-4).map(m => m.mes));
}

function draftChanged(event) {
    clearTimeout(typingTimer);
    const text = event.target?.value ?? '';
    if (text.trim().length < MIN_DRAFT_CHARS) return;
    typingTimer = setTimeout(() => prefetch([text]), TYPING_PAUSE_MS);
}

export function installPrefetch() {
    const { eventSource, eventTypes } = context();
    const types = eventTypes ?? context().event_types;
    if (types?.MESSAGE_RECEIVED) eventSource.on(types.MESSAGE_RECEIVED, replyArrived);
    if (types?.CHAT_CHANGED) eventSource.on(types.CHAT_CHANGED, () => setTimeout(chatOpened, 0));
    const box = document.getElementById('send_textarea');
    box?.addEventListener('input', draftChanged);
}
