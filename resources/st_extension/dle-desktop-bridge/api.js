// Talking to DLE Desktop: where it is, the token, and one fetch wrapper with a deadline, Stop and
// errors in words. Shared by the interceptor, the slash commands, the panel and vector routing.

export const MODULE = 'dle_desktop_bridge';
export const VERSION = '0.4.0'; // the manifest's version (tests/st_bridge checks they agree)
export const DEFAULT_SERVER = 'http://127.0.0.1:8765';

export const DEFAULTS = Object.freeze({
    enabled: true,
    server_url: '', // empty: the address DLE Desktop's installer wrote into dle-config.json
    token: '', // empty: the token from dle-config.json (rewritten by the app when the token is rotated)
    deadline_ms: 0, // 0: automatic (keywords only: 4 s; AI search on: its timeout + 2 s)
    notify: true,
    lore_tools: false, // let the model search the vault and flag gaps (SillyTavern's function calling)
});

const BASE = new URL('.', import.meta.url);
let installed = null;
let refetching = null;

export function context() {
    return SillyTavern.getContext();
}

export function settings() {
    const all = context().extensionSettings;
    if (!all[MODULE] || typeof all[MODULE] !== 'object') all[MODULE] = {};
    const mine = all[MODULE];
    for (const [key, value] of Object.entries(DEFAULTS)) {
        if (!(key in mine)) mine[key] = value;
    }
    return mine;
}

export function saveSettings() {
    context().saveSettingsDebounced();
}

/** What the installer wrote beside this file: {server_url, token}. Re-read after a 401 (a rotated token). */
export async function loadInstalledConfig(force = false) {
    if (installed && !force) return installed;
    if (refetching) return refetching;
    refetching = (async () => {
        try {
            const response = await fetch(new URL('dle-config.json', BASE), { cache: 'no-store' });
            installed = response.ok ? await response.json() : {};
        } catch {
            installed = {};
        }
        refetching = null;
        return installed;
    })();
    return refetching;
}

export function serverUrl() {
    const chosen = String(settings().server_url || installed?.server_url || DEFAULT_SERVER).trim();
    return chosen.replace(/\/+$/, '');
}

function token() {
    return String(settings().token || installed?.token || '');
}

export function hasToken() {
    return token() !== '';
}

export class BridgeError extends Error {
    constructor(message, { kind = 'server', status = 0, cause = '', said = '' } = {}) {
        super(message);
        this.kind = kind; // unreachable | timeout | stopped | refused | server
        this.status = status;
        this.cause = cause;
        this.said = said; // the server's own words (its `error`), for a caller that shows them alone
    }
}

function describeRefusal(status, data) {
    const cause = data?.cause || '';
    if (cause === 'bad_token' || cause === 'token_required') {
        return 'DLE Desktop refused the token. Install the bridge again from DLE Desktop\'s SillyTavern page '
            + '(it writes the current token), or paste the output of `dle-desktop server-token` into the bridge\'s settings.';
    }
    if (cause === 'forbidden_origin') {
        return `DLE Desktop does not accept requests from this page (${location.origin}). `
            + 'Add it under Access in DLE Desktop\'s SillyTavern page.';
    }
    if (status === 503) return `DLE Desktop is not ready: ${data?.error || 'try again in a moment'}`;
    const said = data?.error || data?.message;
    return `DLE Desktop answered HTTP ${status}${said && said !== true ? `: ${said}` : ''}`;
}

/**
 * Call DLE Desktop. `signal` (optional) is the caller's Stop; `timeoutMs` the deadline for the
 * whole call. Throws BridgeError with a message meant for the user.
 */
export async function call(method, path, { body, signal, timeoutMs = 10000, retried = false } = {}) {
    if (!installed) await loadInstalledConfig();
    const controller = new AbortController();
    const forward = () => controller.abort();
    if (signal) {
        if (signal.aborted) throw new BridgeError('stopped', { kind: 'stopped' });
        signal.addEventListener('abort', forward, { once: true });
    }
    let timedOut = false;
    const timer = timeoutMs > 0 ? setTimeout(() => { timedOut = true; controller.abort(); }, timeoutMs) : null;
    let response;
    let data = null;
    try {
        response = await fetch(serverUrl() + path, {
            method,
            headers: { 'Content-Type': 'application/json', 'X-DLE-Token': token(), 'X-DLE-Client': 'st-bridge' },
            body: body === undefined ? undefined : JSON.stringify(body),
            signal: controller.signal,
            cache: 'no-store',
            credentials: 'omit',
            mode: 'cors',
        });
        const text = await response.text();
        try { data = text ? JSON.parse(text) : null; } catch { data = { error: text.slice(0, 200) }; }
    } catch (error) {
        if (signal?.aborted) throw new BridgeError('stopped', { kind: 'stopped' });
        if (timedOut) throw new BridgeError(`DLE Desktop did not answer within ${(timeoutMs / 1000).toFixed(1)} s`, { kind: 'timeout' });
        throw new BridgeError(`DLE Desktop is not reachable at ${serverUrl()} (is it running?)`, { kind: 'unreachable' });
    } finally {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', forward);
    }
    if (response.status === 401 && !retried && !settings().token) {
        await loadInstalledConfig(true); // the app may have rotated the token and rewritten our config
        return call(method, path, { body, signal, timeoutMs, retried: true });
    }
    if (!response.ok) {
        throw new BridgeError(describeRefusal(response.status, data), {
            kind: [401, 403].includes(response.status) ? 'refused' : 'server', status: response.status, cause: data?.cause || '',
            said: typeof data?.error === 'string' ? data.error : '',
        });
    }
    return data;
}

export function chatPath(chatId, part = '') {
    return `/api/dle/v1/chats/${encodeURIComponent(chatId)}${part ? `/${part}` : ''}`;
}

export function escapeHtml(text) {
    return String(text ?? '').replace(/[&<>"']/g, ch => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[ch]));
}
