// The generation interceptor: asks DLE Desktop what lore this generation gets and places every
// group with setExtensionPrompt, at its position, depth and role. It never holds a generation past
// the deadline: on a timeout, an error or DLE Desktop being down, the generation goes on without
// lore and the user sees one short notice (until it works again).

import { BridgeError, call, context, settings } from './api.js';
import { generationDecided } from './sources.js';
import { clearError, changed, recordError, state } from './status.js';

const NONE = -1; // extension_prompt_types.NONE: never injected (what "cleared" means here)
/** Messages older than this are sent as empty placeholders: their count keeps the swipe slot right. */
const FULL_MESSAGES = 300;
const MAX_MES = 1_000_000;
const MAX_NAME = 1000;

const placed = new Set();
const OUTLET_PREFIX = 'customWIOutlet_';
/** Outlet text by macro name. SillyTavern 1.19 clears every customWIOutlet_* prompt after the
 * extensions' interceptors have run (its World Info writes its own outlets there), so
 * {{outlet::NAME}} would come out empty: {{dle-outlet-NAME}} reads this instead, on 1.12 too. */
const outlets = new Map();
const registeredMacros = new Set();

export function outletMacroName(outlet) {
    const slug = String(outlet).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
    return `dle-outlet-${slug || 'unnamed'}`;
}

function registerOutletMacro(name) {
    if (registeredMacros.has(name)) return;
    registeredMacros.add(name);
    try {
        context().registerMacro?.(name, () => outlets.get(name) ?? '', 'Lore from DLE Desktop for this outlet');
    } catch (error) {
        console.warn(`[DLE Desktop bridge] could not register {{${name}}}`, error);
    }
}
let inflight = null;
let chatEpoch = 0;
let lastNotice = ''; // one notice per kind of failure, until a generation gets its lore again
let pendingFork = null;

/** A branch's first generation waits (within its deadline) for its state to be copied. */
export function waitForFork(promise) {
    pendingFork = promise;
    promise.finally(() => { if (pendingFork === promise) pendingFork = null; });
}

export function placedKeys() {
    return [...placed];
}

export function clearPlaced() {
    const { setExtensionPrompt } = context();
    for (const key of placed) setExtensionPrompt(key, '', NONE, 0);
    placed.clear();
    outlets.clear();
}

function place(groups) {
    const { setExtensionPrompt } = context();
    for (const group of groups ?? []) {
        if (!group || typeof group.key !== 'string' || !group.text) continue;
        setExtensionPrompt(group.key, group.text, Number(group.position), Number(group.depth), !!group.scan, Number(group.role));
        placed.add(group.key);
        if (group.key.startsWith(OUTLET_PREFIX)) {
            const name = outletMacroName(group.outlet || group.key.slice(OUTLET_PREFIX.length));
            outlets.set(name, group.text);
            registerOutletMacro(name);
        }
    }
}

function messageFor(message) {
    const extra = message?.extra && typeof message.extra === 'object' ? message.extra : {};
    const out = {
        name: String(message?.name ?? '').slice(0, MAX_NAME),
        mes: String(message?.mes ?? '').slice(0, MAX_MES),
        is_user: !!message?.is_user,
        is_system: !!message?.is_system,
    };
    if (Number.isInteger(message?.swipe_id) && message.swipe_id >= 0) out.swipe_id = message.swipe_id;
    const kept = {};
    if (typeof extra.type === 'string') kept.type = extra.type;
    if (extra.isSmallSys) kept.isSmallSys = true;
    if (Array.isArray(extra.tool_invocations)) kept.tool_invocations = [];
    if (Object.keys(kept).length) out.extra = kept;
    return out;
}

export function chatWindow(chat) {
    const first = Math.max(0, chat.length - FULL_MESSAGES);
    return chat.map((message, i) => (i < first ? { mes: '' } : messageFor(message)));
}

export function deadlineMs() {
    const chosen = Number(settings().deadline_ms);
    if (chosen > 0) return chosen;
    const ai = state.server?.ai_search;
    return ai?.enabled ? Math.max(4000, Number(ai.timeout_ms || 0) + 2000) : 4000;
}

function notifyFailure(error) {
    recordError(error.message);
    if (lastNotice === error.message || !settings().notify) return;
    lastNotice = error.message;
    globalThis.toastr?.warning(`${error.message}. This reply goes on without lore.`, 'DLE Desktop bridge', { timeOut: 6000, preventDuplicates: true });
}

/** Stop the request in flight (SillyTavern's Stop, a chat switch). */
export function abortInflight() {
    inflight?.abort();
    inflight = null;
}

export function chatChanged() {
    chatEpoch += 1;
    abortInflight();
    clearPlaced();
}

function characterName(ctx) {
    return typeof ctx.name2 === 'string' && ctx.name2 ? ctx.name2.slice(0, MAX_NAME) : undefined;
}

export async function retrieveFor(chat, type) {
    const ctx = context();
    const chatId = ctx.getCurrentChatId?.() ?? ctx.chatId;
    if (!chatId) return { skipped: 'no chat is open' };
    abortInflight();
    const controller = new AbortController();
    inflight = controller;
    const epoch = chatEpoch;
    const started = performance.now();
    clearPlaced(); // whatever happens next, nothing from the previous generation stays
    try {
        if (pendingFork) await Promise.race([pendingFork, new Promise(done => setTimeout(done, deadlineMs() / 2))]);
        const body = {
            chat_id: String(chatId),
            messages: chatWindow(chat),
            character_name: characterName(ctx),
            swipe: type === 'swipe' ? true : null,
            // An impersonated reply is written into the input box, not the chat: lore, but no state change.
            dry_run: type === 'impersonate',
        };
        const result = await call('POST', '/api/dle/v1/retrieve', { body, signal: controller.signal, timeoutMs: deadlineMs() });
        if (epoch !== chatEpoch || controller.signal.aborted) return { skipped: 'the chat changed meanwhile' };
        place(result?.groups);
        state.last = { chatId: String(chatId), type: type ?? 'normal', at: Date.now(), ms: performance.now() - started, result };
        if (!body.dry_run) generationDecided(String(chatId), result);
        state.connected = true;
        lastNotice = '';
        clearError();
        changed();
        return result;
    } catch (error) {
        if (error instanceof BridgeError && error.kind === 'stopped') return { skipped: 'stopped' };
        state.connected = error.kind !== 'unreachable' && error.kind !== 'timeout';
        notifyFailure(error instanceof BridgeError ? error : new BridgeError(String(error?.message || error)));
        return { error: error.message };
    } finally {
        if (inflight === controller) inflight = null;
    }
}

/** SillyTavern calls this (the manifest's generate_interceptor) before it builds each prompt. */
export async function interceptor(chat, _contextSize, _abort, type) {
    // DLE's guards: a quiet (background) prompt and a tool-call continuation keep what is placed.
    if (type === 'quiet') return;
    if (!settings().enabled) {
        clearPlaced();
        return;
    }
    const last = chat[chat.length - 1];
    if (last && (last.is_system || Array.isArray(last.extra?.tool_invocations))) return;
    // Continuing a reply writes more of the same message: it keeps the lore chosen for it.
    if (type === 'continue' && placed.size > 0) return;
    await retrieveFor(chat, type);
}
