// What every command shares: SillyTavern's popups and toasts, the open chat, errors in words, and
// the arguments as a user types them (quoted paths with spaces, comma lists).

import { BridgeError, context, escapeHtml } from './api.js';

export { escapeHtml };

export const POSITION_NAMES = { '-1': 'outlet', 0: 'in prompt', 1: 'in chat', 2: 'before prompt' };
const ROLE_NAMES = { 0: 'system', 1: 'user', 2: 'assistant' };

export function toast(kind, text, options = {}) {
    globalThis.toastr?.[kind]?.(text, 'DLE Desktop', options);
}

function wrap(html) {
    return `<div class="dle-desktop-bridge-popup">${html}</div>`;
}

/** A popup to read (it is not awaited: a command answers at once, for /pipe). */
export function popup(html) {
    const { callGenericPopup, POPUP_TYPE } = context();
    if (typeof callGenericPopup === 'function') {
        callGenericPopup(wrap(html), POPUP_TYPE.TEXT, '', { wide: true, large: true, allowVerticalScrolling: true, okButton: 'Close' });
    } else {
        context().callPopup?.(wrap(html), 'text');
    }
}

/** A popup with a text box; resolves to the text typed (or picked), or null when cancelled. */
export async function ask(html, initial = '', okButton = 'Set') {
    const { callGenericPopup, POPUP_TYPE } = context();
    const answer = await callGenericPopup(wrap(html), POPUP_TYPE.INPUT, initial, { wide: true, allowVerticalScrolling: true, okButton });
    return typeof answer === 'string' ? answer : null;
}

/** A pick list inside an ask() popup: a click writes the value into the popup's text box. */
export function pickList(items) {
    if (!items.length) return '<p><i>Nothing to pick from.</i></p>';
    return `<div class="dle-desktop-bridge-picks">${items.map(({ value, label }) => `<button type="button" class="menu_button dle-desktop-bridge-pick" data-value="${escapeHtml(value)}">${label}</button>`).join('')}</div>`;
}

document.addEventListener('click', event => {
    const pick = event.target?.closest?.('.dle-desktop-bridge-pick');
    if (!pick) return;
    const box = pick.closest('dialog, #dialogue_popup')?.querySelector('textarea, input[type="text"], .popup-input');
    if (!box) return;
    box.value = pick.dataset.value ?? '';
    box.dispatchEvent(new Event('input', { bubbles: true }));
    box.focus();
});

export function currentChatId() {
    const ctx = context();
    const id = ctx.getCurrentChatId?.() ?? ctx.chatId;
    if (!id) throw new BridgeError('No chat is open.');
    return String(id);
}

/** Run a command: its text, or the error in words (toasted, and returned for /pipe). */
export async function guarded(name, work) {
    try {
        return String(await work() ?? '');
    } catch (error) {
        const message = error instanceof BridgeError ? error.message : `/${name} failed: ${error?.message || error}`;
        toast('error', message);
        return message;
    }
}

/** `a "b c" 'd e'` → ['a', 'b c', 'd e']. */
export function splitArgs(text) {
    const out = [];
    const pattern = /"([^"]*)"|'([^']*)'|(\S+)/g;
    let match;
    while ((match = pattern.exec(String(text ?? ''))) !== null) {
        const value = match[1] ?? match[2] ?? match[3];
        if (value.trim()) out.push(value.trim());
    }
    return out;
}

/** The unnamed argument as typed, without the quotes around all of it. */
export function argText(value) {
    const text = Array.isArray(value) ? value.join(' ') : String(value ?? '');
    const trimmed = text.trim();
    const quoted = /^"([^"]*)"$|^'([^']*)'$/.exec(trimmed);
    return quoted ? (quoted[1] ?? quoted[2]).trim() : trimmed;
}

export function placeText(item) {
    if (item.position === undefined || item.position === '' || item.position === null) return '';
    const where = POSITION_NAMES[item.position] ?? `position ${item.position}`;
    const role = ROLE_NAMES[item.role] ?? item.role ?? '';
    return item.position === 1 ? `${where} @ depth ${item.depth}, ${role}` : `${where}${role === '' ? '' : `, ${role}`}`;
}

export function table(headers, rows, extraClasses = '') {
    const head = headers.map(h => `<th>${escapeHtml(h)}</th>`).join('');
    const body = rows.map(cells => `<tr>${cells.map(c => `<td>${c}</td>`).join('')}</tr>`).join('');
    return `<table class="dle-desktop-bridge-table ${extraClasses}"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

export function injectedTable(injected) {
    if (!injected?.length) return '<p><i>No entry was injected.</i></p>';
    return table(['Entry', 'Matched by', 'Tokens', 'Placed'], injected.map(i => [
        escapeHtml(i.title), escapeHtml(i.matched_by ?? ''), `${i.tokens ?? ''}${i.truncated ? ' (cut)' : ''}`, escapeHtml(placeText(i)),
    ]));
}

export function verdictTable(verdicts) {
    if (!verdicts?.length) return '<p><i>No verdicts.</i></p>';
    const rows = verdicts.map(v => `<tr class="dle-outcome-${escapeHtml(v.outcome)}"><td>${escapeHtml(v.title)}</td>`
        + `<td>${escapeHtml(v.stage)}</td><td>${escapeHtml(v.outcome)}</td><td>${escapeHtml(v.reason)}</td></tr>`).join('');
    return `<table class="dle-desktop-bridge-table"><thead><tr><th>Entry</th><th>Stage</th><th>Outcome</th><th>Why</th></tr></thead><tbody>${rows}</tbody></table>`;
}

export function listHtml(items) {
    return items?.length ? `<ul>${items.map(n => `<li>${escapeHtml(n)}</li>`).join('')}</ul>` : '';
}

export function valueText(value) {
    return Array.isArray(value) ? value.join(', ') : String(value ?? '');
}
