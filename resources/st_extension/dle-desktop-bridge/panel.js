// The bridge's settings in SillyTavern's Extensions drawer: on/off, DLE Desktop's address, the
// token, the deadline, the lore tools (function calling), and a status line (entries, last generation, last error).

import { DEFAULTS, escapeHtml, hasToken, saveSettings, serverUrl, settings, VERSION } from './api.js';
import { clearPlaced, deadlineMs } from './inject.js';
import { chatPanelHtml, mountChatPanel } from './chatpanel.js';
import { hello, onChange, state } from './status.js';
import { syncTools, toolsAvailable, toolsBlocker, toolsRegistered } from './tools.js';
import { routingStats } from './vectors.js';
import { mountWritersPanel, writersPanelHtml } from './writers.js';

const ID = 'dle_desktop_bridge';

function html() {
    return `
<div id="${ID}_settings" class="dle-desktop-bridge-settings">
  <div class="inline-drawer">
    <div class="inline-drawer-toggle inline-drawer-header">
      <b>DLE Desktop bridge</b>
      <div class="inline-drawer-icon fa-solid fa-circle-chevron-down down"></div>
    </div>
    <div class="inline-drawer-content">
      <label class="checkbox_label" for="${ID}_enabled">
        <input id="${ID}_enabled" type="checkbox"> <span>Put DLE Desktop's lore into every generation</span>
      </label>
      <label for="${ID}_server_url">DLE Desktop address</label>
      <input id="${ID}_server_url" class="text_pole" type="text" autocomplete="off" placeholder="${escapeHtml(serverUrl())}">
      <label for="${ID}_token">Token <small>(leave empty to use the one DLE Desktop's installer wrote)</small></label>
      <input id="${ID}_token" class="text_pole" type="password" autocomplete="off" placeholder="from DLE Desktop">
      <label for="${ID}_deadline_ms">Deadline per generation, ms <small>(0 = automatic)</small></label>
      <input id="${ID}_deadline_ms" class="text_pole" type="number" min="0" max="600000" step="500">
      <label class="checkbox_label" for="${ID}_notify">
        <input id="${ID}_notify" type="checkbox"> <span>Tell me when a reply goes on without lore</span>
      </label>
      <label class="checkbox_label" for="${ID}_lore_tools">
        <input id="${ID}_lore_tools" type="checkbox"> <span>Let the model search the lore vault and flag gaps (function calling)</span>
      </label>
      <small id="${ID}_lore_tools_note" class="dle-desktop-bridge-note">Needs "Enable function calling" on in AI Response
      Configuration (Chat Completion) and a source and model that support tools. What a search does not find, and what
      the model flags, become gap records in DLE Desktop's Librarian.</small>
      <div id="${ID}_lore_tools_status" class="dle-desktop-bridge-status"></div>
      <div class="flex-container">
        <div id="${ID}_test" class="menu_button">Test connection</div>
      </div>
      <div id="${ID}_status" class="dle-desktop-bridge-status" aria-live="polite"></div>
      ${writersPanelHtml()}
      ${chatPanelHtml()}
      <small>Bridge ${VERSION}. /dle lists every command.</small>
    </div>
  </div>
</div>`;
}

function statusText() {
    const s = settings();
    if (!s.enabled) return { kind: 'off', text: 'Off: generations get no lore from DLE Desktop.' };
    const parts = [];
    if (state.connected && state.server) {
        parts.push(`Connected to DLE Desktop ${state.server.server_version} · ${state.server.entries} entries`
            + `${state.server.index_ready ? '' : ' (index not ready)'}`);
        if (state.server.vector_routing) parts.push(`vector routing on (${routingStats.routed} calls)`);
    } else {
        parts.push(`Not connected to ${serverUrl()}`);
    }
    if (!hasToken()) parts.push('no token yet (install the bridge from DLE Desktop)');
    if (state.dleAlsoActive) parts.push('DeepLore Enhanced is also active: both inject lore');
    if (state.last) {
        const r = state.last.result ?? {};
        parts.push(`last generation: ${(r.injected ?? []).length} entries, ${r.total_tokens ?? 0} tokens, ${Math.round(state.last.ms)} ms`);
    }
    parts.push(`deadline ${deadlineMs()} ms`);
    const kind = state.lastError ? 'error' : state.connected ? 'ok' : 'warn';
    return { kind, text: parts.join(' · '), error: state.lastError };
}

function renderTools() {
    const box = document.getElementById(`${ID}_lore_tools_status`);
    if (!box) return;
    const s = settings();
    let text = '';
    let kind = 'off';
    if (s.lore_tools) {
        const blocker = toolsBlocker();
        if (!toolsAvailable()) {
            kind = 'warn';
            text = `Lore tools unavailable: ${blocker}.`;
        } else if (!s.enabled) {
            text = 'Lore tools are off while the bridge is off.';
        } else if (!toolsRegistered()) {
            kind = 'error';
            text = 'Lore tools could not be registered (see the browser console).';
        } else {
            kind = blocker ? 'warn' : 'ok';
            text = blocker ? `Lore tools registered, but not offered to the model: ${blocker}.`
                : 'Lore tools on: the model can call dle_search_lore and dle_flag_lore.';
        }
    }
    box.dataset.kind = kind;
    box.textContent = text;
}

function render() {
    renderTools();
    const box = document.getElementById(`${ID}_status`);
    if (!box) return;
    const { kind, text, error } = statusText();
    box.dataset.kind = kind;
    box.innerHTML = `<span>${escapeHtml(text)}</span>${error ? `<br><span class="dle-desktop-bridge-error">Last error: ${escapeHtml(error)}</span>` : ''}`;
}

function bind(id, read, write) {
    const input = document.getElementById(`${ID}_${id}`);
    write(input, settings()[id]);
    input.addEventListener('change', () => {
        settings()[id] = read(input);
        saveSettings();
        if (id === 'enabled' && !settings().enabled) clearPlaced();
        if (id === 'enabled' || id === 'lore_tools') syncTools();
        if (id === 'server_url' || id === 'token') hello();
        render();
    });
}

export function mountPanel() {
    const host = document.getElementById('extensions_settings2') ?? document.getElementById('extensions_settings');
    if (!host || document.getElementById(`${ID}_settings`)) return;
    host.insertAdjacentHTML('beforeend', html());
    const checkbox = [i => i.checked, (i, v) => { i.checked = !!v; }];
    const text = [i => i.value.trim(), (i, v) => { i.value = v ?? ''; }];
    bind('enabled', ...checkbox);
    bind('notify', ...checkbox);
    bind('lore_tools', ...checkbox);
    bind('server_url', ...text);
    bind('token', ...text);
    bind('deadline_ms', i => {
        const n = Math.round(Number(i.value));
        return Number.isFinite(n) && n >= 0 ? Math.min(n, 600000) : DEFAULTS.deadline_ms;
    }, (i, v) => { i.value = String(v ?? 0); });
    document.getElementById(`${ID}_test`).addEventListener('click', async () => {
        await hello();
        globalThis.toastr?.[state.connected ? 'success' : 'error']?.(
            state.connected ? `Connected: ${state.server.entries} entries` : state.lastError, 'DLE Desktop bridge');
    });
    onChange(render);
    mountChatPanel();
    mountWritersPanel();
    // SillyTavern's own switch for function calling decides whether the tools are offered.
    document.getElementById('openai_function_calling')?.addEventListener('input', () => setTimeout(renderTools, 0));
    render();
}
