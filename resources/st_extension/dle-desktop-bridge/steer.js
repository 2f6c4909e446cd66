// Steering a chat by name, as DeepLore Enhanced's commands do: its gating fields (era, location,
// scene_type, character_present and the vault's own), its folder filter, its pins and blocks.
// DLE Desktop checks every name against the vault: an unknown one is refused with the known ones
// named, and nothing changes.

import { BridgeError, call, chatPath, escapeHtml } from './api.js';
import { contextHtml } from './basics.js';
import { changed, state as bridgeState } from './status.js';
import { argText, ask, currentChatId, pickList, popup, splitArgs, table, toast, valueText } from './ui.js';

/** A change DLE Desktop refused (a name the vault lacks, a bad value): its words, and that nothing changed. */
async function change(method, path, body) {
    try {
        return await call(method, path, { body });
    } catch (error) {
        if (error instanceof BridgeError && [400, 404].includes(error.status) && error.said) {
            throw new BridgeError(`${error.said.replace(/\.$/, '')}. Nothing was changed.`, { status: error.status });
        }
        throw error;
    }
}

/** Tell the panel to read the chat's state again. */
function steered() {
    bridgeState.steered = Date.now();
    changed();
}

async function vaultFields() {
    return (await call('GET', '/api/dle/v1/fields')).fields ?? [];
}

function knownFields(fields) {
    return fields.map(f => f.name).join(', ') || 'none';
}

function findField(fields, name) {
    const wanted = String(name).toLowerCase();
    return fields.find(f => [f.name, f.context_key, f.label].some(n => n && String(n).toLowerCase() === wanted));
}

/** The value as DLE Desktop takes it: a multi-valued field a comma list, another one value. */
async function pickValue(field, chatId) {
    const state = await call('GET', chatPath(chatId));
    const current = state.context?.[field.context_key || field.name];
    const used = field.used_values ?? [];
    const total = (await call('GET', '/api/dle/v1/status', { timeoutMs: 5000 }).catch(() => ({}))).entries;
    const picks = pickList(used.map(u => ({
        value: u.value,
        label: `${escapeHtml(u.value)} <small>(${u.entries} ${u.entries === 1 ? 'entry' : 'entries'}; lets ${u.lets_through}${total ? ` of ${total}` : ''} through)</small>`,
    })));
    const answer = await ask(`<h3>Set ${escapeHtml(field.label || field.name)} for this chat</h3>`
        + `<p>Entries gated by <b>${escapeHtml(field.name)}</b> reach the prompt only when it matches.`
        + `${field.multi ? ' Several values: a comma list.' : ''} Pick a value the vault uses or type one; empty changes nothing.</p>${picks}`,
    valueText(current));
    return answer === null || !answer.trim() ? null : answer.trim();
}

export async function setField(fieldName, rawValue) {
    const chatId = currentChatId();
    let value = argText(rawValue);
    if (!fieldName) {
        throw new BridgeError(`Name a field, e.g. /dle-set-field location Harbour. The vault's fields: ${knownFields(await vaultFields())}.`);
    }
    let name = fieldName;
    if (!value) {
        const fields = await vaultFields();
        const field = findField(fields, fieldName);
        if (!field) throw new BridgeError(`The vault has no field "${fieldName}"; its fields are: ${knownFields(fields)}. Nothing was changed.`);
        name = field.name;
        value = await pickValue(field, chatId);
        if (value === null) return `${field.name} unchanged`;
    }
    const saved = await change('POST', chatPath(chatId, 'context-field'), { field: name, value });
    steered();
    const text = `${saved.field} is now ${valueText(saved.value)} in this chat.`;
    toast('success', text);
    return text;
}

export async function clearField(_args, raw) {
    const name = argText(raw);
    if (!name) throw new BridgeError(`Name the field to clear, e.g. /dle-clear-field era. The vault's fields: ${knownFields(await vaultFields())}.`);
    const saved = await change('POST', chatPath(currentChatId(), 'context-field'), { field: name, value: null });
    steered();
    const text = `${saved.field} cleared in this chat.`;
    toast('success', text);
    return text;
}

/** /dle-set-field <field> [value]: the field is the first word (or a quoted name). */
export async function setFieldCommand(_args, raw) {
    const text = String(Array.isArray(raw) ? raw.join(' ') : raw ?? '').trim();
    const [field] = splitArgs(text);
    const rest = field ? text.replace(/^("[^"]*"|'[^']*'|\S+)\s*/, '') : '';
    return setField(field, rest);
}

export function setNamedField(field) {
    return (_args, raw) => setField(field, raw);
}

export async function contextState() {
    const chatId = currentChatId();
    const [state, fields] = await Promise.all([call('GET', chatPath(chatId)), vaultFields()]);
    const context = state.context ?? {};
    const rows = fields.map(f => [escapeHtml(f.label || f.name), escapeHtml(f.name),
        escapeHtml(valueText(context[f.context_key || f.name]) || '—'), String(f.entries_with_field ?? 0)]);
    popup('<h3>Gating context of this chat</h3>' + contextHtml(state)
        + table(['Field', 'Name', 'Set to', 'Entries gated by it'], rows)
        + '<p><small>/dle-set-field &lt;field&gt; [value] · /dle-clear-field &lt;field&gt; · /dle-clear-all-context</small></p>');
    const set = Object.entries(context).map(([k, v]) => `${k}: ${valueText(v)}`);
    const folders = state.folder_filter?.length ? `folders: ${state.folder_filter.join(', ')}` : '';
    return [...set, folders].filter(Boolean).join('; ') || 'No gating context is set for this chat.';
}

export async function clearAllContext() {
    await call('PUT', chatPath(currentChatId(), 'context'), { body: { context: null } });
    steered();
    const text = 'Every gating field cleared in this chat.';
    toast('success', text);
    return text;
}

async function vaultFolders() {
    return (await call('GET', '/api/dle/v1/folders')).folders ?? [];
}

/** Quoted paths, or words; a whole unquoted argument that is one folder (with spaces) stays one. */
function foldersOf(raw, known) {
    const whole = argText(raw).replace(/^\/+|\/+$/g, '');
    if (known.some(f => f.path.toLowerCase() === whole.toLowerCase())) return [whole];
    return splitArgs(raw);
}

async function saveFolders(folders) {
    const saved = await change('PUT', chatPath(currentChatId(), 'folders'), { folders });
    steered();
    const text = saved.folder_filter?.length
        ? `Only entries in ${saved.folder_filter.join(', ')} reach this chat's prompt.`
        : 'Folder filter off: entries from every folder reach this chat\'s prompt.';
    toast('success', text);
    return text;
}

export async function setFolder(_args, raw) {
    const chatId = currentChatId();
    const known = await vaultFolders();
    let folders = foldersOf(raw, known);
    if (!folders.length) {
        const state = await call('GET', chatPath(chatId));
        const picks = pickList(known.map(f => ({ value: `"${f.path}"`, label: `${escapeHtml(f.path)} <small>(${f.entries})</small>` })));
        const answer = await ask('<h3>Folder filter for this chat</h3><p>Only entries in these folders (and below) reach the prompt; '
            + 'constants and pins are exempt. Pick a folder or type paths (quote a path with spaces); empty changes nothing.</p>'
            + picks, (state.folder_filter ?? []).map(f => `"${f}"`).join(' '));
        if (answer === null || !answer.trim()) return 'folder filter unchanged';
        folders = foldersOf(answer, known);
    }
    return saveFolders(folders);
}

export async function clearFolder() {
    return saveFolders(null);
}

export async function pinsAndBlocks() {
    const state = await call('GET', chatPath(currentChatId()));
    const names = list => (list ?? []).map(r => (r.vault ? `${r.title} (${r.vault})` : r.title ?? r));
    const pins = names(state.pins);
    const blocks = names(state.blocks);
    const section = (title, items, undo) => `<h4>${title}</h4>${items.length
        ? `<ul>${items.map(i => `<li>${escapeHtml(i)}</li>`).join('')}</ul>` : '<p><i>none</i></p>'}<p><small>${undo}</small></p>`;
    popup('<h3>Pins and blocks of this chat</h3>'
        + section('Pinned (always injected)', pins, '/dle-unpin &lt;title&gt; undoes a pin')
        + section('Blocked (never injected)', blocks, '/dle-unblock &lt;title&gt; undoes a block'));
    return `Pinned: ${pins.join(', ') || 'none'}. Blocked: ${blocks.join(', ') || 'none'}.`;
}
