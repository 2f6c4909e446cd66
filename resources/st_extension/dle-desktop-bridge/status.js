// What the bridge knows right now, for the panel, /dle-status and the heartbeat: DLE Desktop's
// last hello answer, the last generation's result and the last error.

import { call, context, VERSION } from './api.js';

export const state = {
    server: null, // the last /bridge/hello answer
    connected: false,
    lastError: '',
    lastErrorAt: 0,
    last: null, // {chatId, type, at, ms, result}
};

const listeners = new Set();

export function onChange(listener) {
    listeners.add(listener);
}

export function changed() {
    for (const listener of listeners) {
        try { listener(state); } catch (error) { console.error('[DLE Desktop bridge] status listener failed', error); }
    }
}

export function recordError(message) {
    state.lastError = message;
    state.lastErrorAt = Date.now();
    changed();
}

export function clearError() {
    if (state.lastError) {
        state.lastError = '';
        changed();
    }
}

function stVersion() {
    const fromGlobal = globalThis.SillyTavern?.version ?? globalThis.CLIENT_VERSION;
    return typeof fromGlobal === 'string' ? fromGlobal.replace(/^SillyTavern:/, '').split(':')[0] : null;
}

let stVersionCache = null;
async function sillyTavernVersion() {
    if (stVersionCache) return stVersionCache;
    try {
        const response = await fetch('/version', { cache: 'no-store' });
        const data = response.ok ? await response.json() : null;
        stVersionCache = data?.pkgVersion || stVersion();
    } catch {
        stVersionCache = stVersion();
    }
    return stVersionCache;
}

/** Tell DLE Desktop we are here (and what we last saw go wrong); learn its options. */
export async function hello() {
    const ctx = context();
    const body = {
        extension_version: VERSION,
        st_version: await sillyTavernVersion(),
        chat_id: ctx.getCurrentChatId?.() || null,
        character: ctx.name2 || null,
        last_error: state.lastError ? state.lastError.slice(0, 1000) : null,
    };
    for (const key of Object.keys(body)) if (body[key] === null) delete body[key];
    try {
        state.server = await call('POST', '/api/dle/v1/bridge/hello', { body, timeoutMs: 5000 });
        state.connected = true;
    } catch (error) {
        state.connected = false;
        if (error.kind !== 'stopped') state.lastError = error.message;
    }
    changed();
    return state.server;
}
