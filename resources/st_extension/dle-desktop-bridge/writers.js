// DeepLore Enhanced's writers in the chat (dle-behaviour §5.1-5.2): after each character message
// the bridge asks DLE Desktop for an automatic Session Scribe and Auto Lorebook run. DLE Desktop
// keeps the intervals and runs one Scribe per chat, so two tabs on one chat write one note. A chat
// switch or Stop cancels the running Scribe. Also /dle-scribe, /dle-scribe-history, /dle-newlore
// (/dle-suggest) and the review popup of the suggestions waiting.

import { BridgeError, call, chatPath, context, escapeHtml, settings } from './api.js';
import { chatWindow } from './inject.js';
import { argText, currentChatId, popup, toast } from './ui.js';

const CONFIG_MS = 30_000;
const AUTO_TIMEOUT_MS = 180_000; // the server's own channel timeouts end a call first
const TYPES = ['character', 'location', 'lore', 'organization', 'story'];

let config = null; // GET /writers: {scribe, auto_suggest, ai_notepad}
let configAt = 0;
let shownChat = '';
const notices = new Set(); // one notice per kind of failure until the next success

export function writersConfig() {
    return config;
}

export async function refreshWritersConfig(force = false) {
    if (!force && config && Date.now() - configAt < CONFIG_MS) return config;
    try {
        config = await call('GET', '/api/dle/v1/writers', { timeoutMs: 5000 });
        configAt = Date.now();
    } catch {
        // DLE Desktop down: the interceptor already says so; the writers wait for it.
    }
    return config;
}

function characterName() {
    const name = context().name2;
    return typeof name === 'string' && name ? name.slice(0, 1000) : undefined;
}

function aiMessageCount(chat) {
    return chat.filter(m => m && !m.is_user && !m.is_system).length;
}

function noticeOnce(kind, error) {
    const text = error?.message || String(error);
    if (notices.has(kind + text)) return;
    notices.add(kind + text);
    if (settings().notify) toast('warning', text, { timeOut: 8000 });
}

function succeeded(kind) {
    for (const key of [...notices]) if (key.startsWith(kind)) notices.delete(key);
}

function noteText(note) {
    return note ? `${note.path}${note.vault ? ` (${note.vault})` : ''}` : '';
}

async function autoScribe(chatId, chat) {
    try {
        const answer = await call('POST', chatPath(chatId, 'scribe'), {
            body: { messages: chatWindow(chat), character: characterName(), chat_length: chat.length, auto: true },
            timeoutMs: AUTO_TIMEOUT_MS,
        });
        succeeded('scribe');
        if (answer?.ran && settings().notify) toast('success', `Session note written: ${noteText(answer.note)}`, { timeOut: 4000 });
    } catch (error) {
        // Busy (another tab) and cancelled are not failures; the rest is said once.
        if (error instanceof BridgeError && (error.status === 409 && /already|cancel/i.test(error.said))) return;
        if (error instanceof BridgeError && error.kind === 'stopped') return;
        noticeOnce('scribe', new Error(`Session Scribe: ${error.said || error.message}`));
    }
}

async function autoSuggest(chatId, chat) {
    try {
        const answer = await call('POST', chatPath(chatId, 'suggestions'), {
            body: { messages: chatWindow(chat), ai_messages: aiMessageCount(chat), auto: true },
            timeoutMs: AUTO_TIMEOUT_MS,
        });
        succeeded('suggest');
        const waiting = answer?.suggestions?.length ?? 0;
        const written = answer?.written?.length ?? 0;
        if (written) toast('success', `Auto Lorebook wrote ${written} new ${written === 1 ? 'entry' : 'entries'}: ${answer.written.map(w => w.title).join(', ')}`);
        if (waiting) {
            toast('info', `Auto Lorebook has ${waiting} new lore ${waiting === 1 ? 'suggestion' : 'suggestions'} for review. Click to review.`, {
                timeOut: 15000, onclick: () => reviewSuggestions(chatId),
            });
        }
    } catch (error) {
        if (error instanceof BridgeError && error.kind === 'stopped') return;
        noticeOnce('suggest', new Error(`Auto Lorebook: ${error.said || error.message}`));
    }
}

/** A character message was shown: the automatic runs that are due (the server decides). */
async function characterMessage(_id, type) {
    if (!settings().enabled || type === 'first_message') return;
    const ctx = context();
    const chatId = String(ctx.getCurrentChatId?.() ?? '');
    const chat = ctx.chat ?? [];
    if (!chatId || !chat.length) return;
    const current = await refreshWritersConfig();
    if (current?.scribe?.enabled) autoScribe(chatId, chat);
    if (current?.auto_suggest?.enabled) autoSuggest(chatId, chat);
}

function cancelScribe(chatId) {
    if (!chatId) return;
    call('DELETE', chatPath(chatId, 'scribe'), { timeoutMs: 5000 }).catch(() => {});
}

export function installWriters() {
    const { eventSource, eventTypes } = context();
    const types = eventTypes ?? context().event_types;
    eventSource.on(types.CHARACTER_MESSAGE_RENDERED, characterMessage);
    eventSource.on(types.CHAT_CHANGED, () => {
        const now = String(context().getCurrentChatId?.() ?? '');
        if (shownChat && shownChat !== now) cancelScribe(shownChat);
        shownChat = now;
        refreshWritersConfig(true);
    });
    eventSource.on(types.GENERATION_STOPPED, () => cancelScribe(String(context().getCurrentChatId?.() ?? '')));
    shownChat = String(context().getCurrentChatId?.() ?? '');
    refreshWritersConfig(true);
}

// ---- commands -------------------------------------------------------------------------------

function chatForWriters() {
    const chat = context().chat ?? [];
    if (!chat.some(m => m && !m.is_system && String(m.mes ?? '').trim())) {
        throw new BridgeError('This chat has no messages to read yet.');
    }
    return chat;
}

/** /dle-scribe [focus]: a session note now. */
export async function scribeNow(_args, value) {
    const chatId = currentChatId();
    const chat = chatForWriters();
    const focus = argText(value);
    toast('info', 'Session Scribe is writing…', { timeOut: 3000 });
    const answer = await call('POST', chatPath(chatId, 'scribe'), {
        body: { messages: chatWindow(chat), character: characterName(), chat_length: chat.length, focus },
        timeoutMs: AUTO_TIMEOUT_MS,
    });
    const text = `Session note written: ${noteText(answer.note)}`;
    toast('success', text);
    return text;
}

async function openInApp(body) {
    try {
        await call('POST', '/api/dle/v1/app/show', { body, timeoutMs: 5000 });
        return true;
    } catch (error) {
        toast('warning', error.said || error.message);
        return false;
    }
}

/** /dle-scribe-history: the chat's session notes, newest first; each opens in the app. */
export async function scribeHistory() {
    const chatId = currentChatId();
    const history = await call('GET', chatPath(chatId, 'scribe'));
    const notes = history.notes ?? [];
    if (!notes.length) {
        const text = 'No session notes for this chat yet. /dle-scribe writes one now; Session Scribe in DLE Desktop writes them every few messages.';
        popup(`<h3>Session notes</h3><p>${escapeHtml(text)}</p>`);
        return text;
    }
    const rows = notes.map(n => `<li><button type="button" class="menu_button dle-desktop-bridge-open-note" data-vault="${escapeHtml(n.vault)}" data-path="${escapeHtml(n.path)}">Open</button> `
        + `<b>${escapeHtml(n.title)}</b> <small>${escapeHtml(n.path)}${n.created_at ? ` · ${escapeHtml(new Date(n.created_at * 1000).toLocaleString())}` : ''}</small></li>`);
    popup(`<h3>Session notes of this chat (${notes.length}, newest first)</h3><ul class="dle-desktop-bridge-notes">${rows.join('')}</ul>`
        + (history.last_summary ? `<details><summary>The last summary</summary><pre class="dle-desktop-bridge-pre">${escapeHtml(history.last_summary)}</pre></details>` : ''));
    return notes.map(n => n.title).join('\n');
}

document.addEventListener('click', event => {
    const open = event.target?.closest?.('.dle-desktop-bridge-open-note');
    if (open) openInApp({ view: 'vault', vault: open.dataset.vault, path: open.dataset.path });
});

/** /dle-newlore, /dle-suggest: Auto Lorebook now, then the review popup. */
export async function newLore() {
    const chatId = currentChatId();
    const chat = chatForWriters();
    toast('info', 'Auto Lorebook is reading the chat…', { timeOut: 3000 });
    const answer = await call('POST', chatPath(chatId, 'suggestions'), {
        body: { messages: chatWindow(chat), ai_messages: aiMessageCount(chat) },
        timeoutMs: AUTO_TIMEOUT_MS,
    });
    const written = answer.written ?? [];
    if (written.length) {
        const text = `Auto Lorebook wrote ${written.map(w => w.title).join(', ')} (write without review is on).`;
        toast('success', text);
        return text;
    }
    const dropped = answer.dropped ?? [];
    if (!(answer.suggestions ?? []).length) {
        const why = dropped.length ? ` Dropped: ${dropped.map(d => `${d.title} (${d.reason})`).join('; ')}.` : '';
        const text = `Auto Lorebook found no new entries to suggest.${why}`;
        toast('info', text);
        return text;
    }
    await reviewSuggestions(chatId);
    return answer.suggestions.map(p => p.suggestion?.title).join(', ');
}

function card(pending) {
    const s = pending.suggestion ?? {};
    const options = TYPES.map(t => `<option value="${t}"${t === s.type ? ' selected' : ''}>${t}</option>`).join('');
    return `<div class="dle-desktop-bridge-suggestion" data-id="${escapeHtml(pending.id)}">
        <h4>${escapeHtml(s.title)} <small>(${escapeHtml(s.type)})</small></h4>
        <label>Title <input class="text_pole" data-field="title" value="${escapeHtml(s.title)}"></label>
        <label>Type <select class="text_pole" data-field="type">${options}</select></label>
        <label>Keys <input class="text_pole" data-field="keys" value="${escapeHtml((s.keys ?? []).join(', '))}"></label>
        <label>Summary <textarea class="text_pole" rows="2" data-field="summary">${escapeHtml(s.summary)}</textarea></label>
        <label>Content <textarea class="text_pole" rows="5" data-field="content">${escapeHtml(s.content)}</textarea></label>
        <div class="dle-desktop-bridge-suggestion-buttons">
            <button type="button" class="menu_button" data-act="accept">Accept</button>
            <button type="button" class="menu_button" data-act="reject">Reject</button>
            <button type="button" class="menu_button" data-act="librarian">Open in Librarian</button>
            <span class="dle-desktop-bridge-suggestion-said"></span>
        </div></div>`;
}

/** The review popup: each suggestion waiting for this chat as an editable card. */
export async function reviewSuggestions(chatId = currentChatId()) {
    const pending = (await call('GET', chatPath(chatId, 'suggestions'))).suggestions ?? [];
    if (!pending.length) {
        popup('<h3>Lore suggestions</h3><p>No suggestions are waiting for this chat. /dle-newlore asks for some now.</p>');
        return 'none waiting';
    }
    popup(`<h3>Lore suggestions (${pending.length})</h3><p>Edit what you like; Accept writes the entry into the vault `
        + '(undoable in DLE Desktop), Reject drops it. They also wait in DLE Desktop\'s Librarian.</p>'
        + pending.map(card).join(''));
    return pending.map(p => p.suggestion?.title).join(', ');
}

function editsOf(box) {
    const value = field => box.querySelector(`[data-field="${field}"]`)?.value ?? '';
    return {
        title: value('title').trim(),
        type: value('type'),
        keys: value('keys').split(',').map(k => k.trim()).filter(Boolean),
        summary: value('summary').trim(),
        content: value('content'),
    };
}

async function act(box, what) {
    const id = box.dataset.id;
    const said = box.querySelector('.dle-desktop-bridge-suggestion-said');
    const settle = (text, done) => {
        said.textContent = text;
        if (done) box.querySelectorAll('button, input, select, textarea').forEach(n => { n.disabled = true; });
        box.classList.toggle('dle-desktop-bridge-done', !!done);
    };
    try {
        if (what === 'accept') {
            const answer = await call('POST', `/api/dle/v1/suggestions/${encodeURIComponent(id)}/accept`, { body: editsOf(box) });
            settle(`Written: ${noteText(answer.written)}`, true);
            toast('success', `New entry written: ${answer.written?.title ?? ''}`);
        } else if (what === 'reject') {
            await call('POST', `/api/dle/v1/suggestions/${encodeURIComponent(id)}/reject`);
            settle('Rejected', true);
        } else if (await openInApp({ view: 'librarian', suggestion: id })) {
            settle('Opened in DLE Desktop\'s Librarian', false);
        }
    } catch (error) {
        settle(error.said || error.message, false);
    }
}

document.addEventListener('click', event => {
    const button = event.target?.closest?.('.dle-desktop-bridge-suggestion [data-act]');
    if (!button) return;
    act(button.closest('.dle-desktop-bridge-suggestion'), button.dataset.act);
});

// ---- the panel's switches (they change DLE Desktop's settings, as its Settings → Writers does) --

const PANEL = 'dle_desktop_bridge_writers';
const SWITCHES = [
    ['scribe_enabled', 'Session Scribe: a session note in the vault every few messages', c => c.scribe.enabled],
    ['auto_suggest_enabled', 'Auto Lorebook: propose the entries the chat is missing, for review', c => c.auto_suggest.enabled],
    ['ai_notepad_enabled', 'AI Notepad: the model keeps private notes across the chat', c => c.ai_notepad.enabled],
];

export function writersPanelHtml() {
    const boxes = SWITCHES.map(([key, label]) => `<label class="checkbox_label" for="${PANEL}_${key}">`
        + `<input id="${PANEL}_${key}" type="checkbox" data-switch="${key}" disabled> <span>${escapeHtml(label)}</span></label>`).join('');
    return `<div id="${PANEL}" class="dle-desktop-bridge-writers"><b>Writers</b> <small>(DLE Desktop's settings; off until you turn them on)</small>
      ${boxes}
      <label for="${PANEL}_mode">AI Notepad mode</label>
      <select id="${PANEL}_mode" class="text_pole" data-switch="ai_notepad_mode" disabled>
        <option value="tag">tag: the model writes &lt;dle-notes&gt; blocks, hidden from the chat</option>
        <option value="extract">extract: a second call picks the notes out of each reply</option>
      </select>
      <div id="${PANEL}_status" class="dle-desktop-bridge-status"></div></div>`;
}

function renderWriters() {
    const status = document.getElementById(`${PANEL}_status`);
    if (!status) return;
    const inputs = document.querySelectorAll(`#${PANEL} [data-switch]`);
    if (!config) {
        inputs.forEach(i => { i.disabled = true; });
        status.textContent = 'Connect to DLE Desktop to turn the writers on or off.';
        return;
    }
    for (const [key, , read] of SWITCHES) {
        const box = document.getElementById(`${PANEL}_${key}`);
        box.checked = !!read(config);
        box.disabled = false;
    }
    const mode = document.getElementById(`${PANEL}_mode`);
    mode.value = config.ai_notepad.mode;
    mode.disabled = false;
    status.textContent = `Session notes go to “${config.scribe.folder || '(vault root)'}”, every ${config.scribe.interval} messages; `
        + `Auto Lorebook runs every ${config.auto_suggest.interval} AI messages. The AI connection of each is set in DLE Desktop's Channels view.`;
}

async function switchWriter(input) {
    const key = input.dataset.switch;
    const value = input.tagName === 'SELECT' ? input.value : input.checked;
    try {
        config = await call('PUT', '/api/dle/v1/writers', { body: { [key]: value }, timeoutMs: 10_000 });
        configAt = Date.now();
    } catch (error) {
        toast('error', error.said || error.message);
    }
    renderWriters();
}

export function mountWritersPanel() {
    document.getElementById(PANEL)?.addEventListener('change', event => {
        const input = event.target?.closest?.('[data-switch]');
        if (input) switchWriter(input);
    });
    refreshWritersConfig(true).then(renderWriters);
}

/** The config was read again (heartbeat, chat switch): the panel follows the app's Settings. */
export async function refreshWritersPanel() {
    await refreshWritersConfig(true);
    renderWriters();
}
