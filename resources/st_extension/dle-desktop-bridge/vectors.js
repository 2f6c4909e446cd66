// Vector routing (off unless turned on in DLE Desktop): SillyTavern's Vector Storage calls its own
// server's /api/vector/* routes with fetch; while routing is on, those calls go to DLE Desktop's
// copy of the same API instead, so chat vectors, the Data Bank and World Info vectors live in its
// memory-mapped store and are embedded by its local model. SillyTavern's own vector files are
// never touched, so turning routing off again finds them as they were.

import { loadInstalledConfig, serverUrl, settings } from './api.js';
import { state } from './status.js';

const ROUTED = /^\/api\/vector\/(list|insert|delete|query|query-multi|purge|purge-all)$/;
/** Sources whose vectors the browser computes and sends along: stored as given. */
const PRECOMPUTED = new Set(['koboldcpp', 'webllm']);

let installedFetch = null;
export const routingStats = { routed: 0, failed: 0, lastPath: '' };

export function routingOn() {
    return !!state.server?.vector_routing && settings().enabled;
}

function sameOriginPath(input) {
    try {
        const url = new URL(typeof input === 'string' ? input : input?.url ?? String(input), location.href);
        return url.origin === location.origin ? url.pathname : null;
    } catch {
        return null;
    }
}

function rewriteBody(body) {
    if (typeof body !== 'string') return body;
    try {
        const data = JSON.parse(body);
        if (data && typeof data === 'object' && !PRECOMPUTED.has(data.source)) {
            // DLE Desktop's local model embeds everything routed here ("transformers" is its name for it).
            data.source = 'transformers';
        }
        return JSON.stringify(data);
    } catch {
        return body;
    }
}

async function readToken() {
    const config = await loadInstalledConfig();
    return String(settings().token || config?.token || '');
}

export function installVectorRouting() {
    if (installedFetch) return;
    const original = globalThis.fetch.bind(globalThis);
    installedFetch = original;
    globalThis.fetch = async function dleDesktopFetch(input, init = {}) {
        const path = sameOriginPath(input);
        if (!path || !ROUTED.test(path) || !routingOn()) return original(input, init);
        const headers = new Headers(init.headers ?? (typeof input === 'object' ? input.headers : undefined));
        headers.delete('X-CSRF-Token'); // SillyTavern's own session token stays with SillyTavern
        headers.set('X-DLE-Token', await readToken());
        headers.set('X-DLE-Client', 'st-bridge');
        if (!headers.has('Content-Type')) headers.set('Content-Type', 'application/json');
        routingStats.lastPath = path;
        try {
            const response = await original(serverUrl() + path, {
                method: init.method ?? 'POST',
                headers,
                body: rewriteBody(init.body),
                signal: init.signal,
                credentials: 'omit',
                mode: 'cors',
                cache: 'no-store',
            });
            routingStats.routed += 1;
            return response;
        } catch (error) {
            routingStats.failed += 1;
            throw error;
        }
    };
}
