// AI Notepad in the chat (dle-behaviour §5.3). Each finished reply goes to DLE Desktop, which takes
// its notes out (tag mode: the <dle-notes> blocks; extract mode: the [OOC: …]-style asides, with the
// notes picked by a call on the AI Notepad channel in the background) and answers the text to show.
// The message is rewritten before SillyTavern draws it (or redrawn, when it streamed) and keeps its
// notes in extra.deeplore_ai_notes, as DLE keeps them. A swipe, delete or edit takes a reply's notes
// back out of the chat's notepad. The notepad reaches the next prompt as one more lore group.

import { call, chatPath, context, escapeHtml, settings } from './api.js';
import { keepOnMessage } from './trail.js';
import { argText, currentChatId, popup, toast } from './ui.js';
import { refreshWritersConfig, writersConfig } from './writers.js';

const TIMEOUT_MS = 8000;
const rewritten = new Set(); // message ids whose text changed, redrawn when SillyTavern shows them
let lastNotice = '';

function swipeOf(message) {
    return Number.isInteger(message?.swipe_id) && message.swipe_id >= 0 ? message.swipe_id : 0;
}

function chatIdNow() {
    return String(context().getCurrentChatId?.() ?? '');
}

async function notepadOn() {
    if (!settings().enabled) return null;
    const config = writersConfig() ?? await refreshWritersConfig();
    return config?.ai_notepad?.enabled ? config.ai_notepad : null;
}

function said(error) {
    const text = `AI Notepad: ${error?.said || error?.message || error}`;
    if (text === lastNotice) return;
    lastNotice = text;
    if (settings().notify) toast('warning', text, { timeOut: 8000 });
}

/** MESSAGE_RECEIVED: SillyTavern waits for this before it draws a reply that did not stream. */
async function replyReceived(id, type) {
    if (type === 'first_message' || type === 'command') return;
    const notepad = await notepadOn();
    const messageId = Number(id);
    const message = (context().chat ?? [])[messageId];
    const chatId = chatIdNow();
    if (!notepad || !chatId || !message || message.is_user || message.is_system) return;
    const text = String(message.mes ?? '');
    if (notepad.mode === 'tag' && !/<dle-notes>/i.test(text)) return; // nothing to take out
    const swipe = swipeOf(message);
    try {
        const answer = await call('POST', chatPath(chatId, 'notes'), {
            body: { message: messageId, swipe, text, wait: false }, timeoutMs: TIMEOUT_MS,
        });
        lastNotice = '';
        if (chatIdNow() !== chatId || context().chat?.[messageId] !== message) return;
        if (typeof answer?.text === 'string' && answer.text !== text) {
            message.mes = answer.text;
            if (Array.isArray(message.swipes) && typeof message.swipes[swipe] === 'string') message.swipes[swipe] = answer.text;
            rewritten.add(messageId);
        }
        if (answer?.notes) {
            keepOnMessage(message, 'deeplore_ai_notes', answer.notes);
            rewritten.add(messageId);
        }
        if (answer?.error) said(new Error(answer.error));
    } catch (error) {
        said(error); // the reply is shown as written; the chat goes on
    }
}

/** CHARACTER_MESSAGE_RENDERED: a streamed reply was drawn before it was rewritten. */
async function replyShown(id) {
    const messageId = Number(id);
    if (!rewritten.delete(messageId)) return;
    const ctx = context();
    const message = ctx.chat?.[messageId];
    if (!message) return;
    try {
        ctx.updateMessageBlock?.(messageId, message);
        await ctx.saveChat?.();
    } catch (error) {
        console.warn('[DLE Desktop bridge] could not redraw a reply without its notes', error);
    }
}

async function rollback(query) {
    const chatId = chatIdNow();
    if (!chatId || !(await notepadOn())) return;
    try {
        await call('DELETE', `${chatPath(chatId, 'notes')}?${query}`, { timeoutMs: TIMEOUT_MS });
    } catch (error) {
        said(error);
    }
}

export function installNotepad() {
    const { eventSource, eventTypes } = context();
    const types = eventTypes ?? context().event_types;
    eventSource.on(types.MESSAGE_RECEIVED, replyReceived);
    eventSource.on(types.CHARACTER_MESSAGE_RENDERED, replyShown);
    // DLE takes a reply's notes back out when it is swiped, deleted or edited.
    eventSource.on(types.MESSAGE_SWIPED, id => rollback(`message=${Number(id)}`));
    eventSource.on(types.MESSAGE_DELETED, length => rollback(`message=${Math.max(0, Number(length) || 0)}&later=true`));
    eventSource.on(types.MESSAGE_EDITED, id => {
        const message = context().chat?.[Number(id)];
        if (message && !message.is_user) rollback(`message=${Number(id)}&swipe=${swipeOf(message)}`);
    });
    eventSource.on(types.CHAT_CHANGED, () => rewritten.clear());
}

/** /dle-ai-notepad [clear]: the chat's notepad, or clear it. */
export async function notepadCommand(_args, value) {
    const chatId = currentChatId();
    const clear = argText(value).toLowerCase();
    if (clear && clear !== 'clear') throw new Error(`/dle-ai-notepad takes "clear" or nothing, not "${clear}"`);
    const data = clear
        ? await call('DELETE', chatPath(chatId, 'notepad'))
        : await call('GET', chatPath(chatId, 'notepad'));
    if (clear) {
        toast('success', 'This chat\'s AI Notepad is cleared.');
        return 'cleared';
    }
    const state = data.enabled ? `on, ${data.mode} mode` : 'off (turn it on in DLE Desktop\'s Settings → Writers, or in this panel)';
    const size = `${(data.bytes / 1024).toFixed(1)} of ${Math.round(data.cap_bytes / 1024)} KiB`;
    popup(`<h3>AI Notepad of this chat</h3><p>AI Notepad is ${escapeHtml(state)} · ${size} · `
        + `notes from ${data.replies?.length ?? 0} replies. /dle-ai-notepad clear empties it.</p>`
        + (data.text ? `<pre class="dle-desktop-bridge-pre">${escapeHtml(data.text)}</pre>` : '<p><i>The notepad is empty.</i></p>'));
    return data.text;
}
