// DLE Desktop bridge: a SillyTavern UI extension that puts the lore DLE Desktop chooses into the
// prompt of every generation, with DeepLore Enhanced's slash commands and, when turned on in the
// app, SillyTavern's Vector Storage routed to DLE Desktop, and (when turned on) function tools that
// let the model search the vault and flag gaps. Installed (and updated) by DLE Desktop,
// which writes dle-config.json (its address and token) beside this file.

import { call, chatPath, context, loadInstalledConfig, MODULE, settings } from './api.js';
import { commandNames, registerCommands } from './commands.js';
import { abortInflight, chatChanged, interceptor, placedKeys, waitForFork } from './inject.js';
import { mountPanel } from './panel.js';
import { installPrefetch } from './prefetch.js';
import { installSources, linked, showSources } from './sources.js';
import { changed, hello, state } from './status.js';
import { flagLore, injectedTitles, searchLore, syncTools, toolsRegistered } from './tools.js';
import { installVectorRouting, routingStats } from './vectors.js';
import { installNotepad } from './notepad.js';
import { installTrail, pendingToolCalls } from './trail.js';
import { installWriters, refreshWritersPanel, writersConfig } from './writers.js';

const HEARTBEAT_MS = 30_000;

globalThis.dleDesktopBridgeInterceptor = interceptor;

async function forgetChat(chatId) {
    if (!chatId || !state.server?.forget_deleted_chats) return;
    try {
        await call('DELETE', chatPath(String(chatId)), { timeoutMs: 5000 });
    } catch (error) {
        console.warn('[DLE Desktop bridge] could not forget a deleted chat', error);
    }
}

const forked = new Set();

/**
 * A branch or checkpoint (SillyTavern writes `main_chat` into its metadata) starts with the state
 * of the chat it came from, as DLE's chat metadata is copied along with a branch. DLE Desktop
 * never overwrites a chat that already has state, so asking again is harmless.
 */
function forkIfBranch() {
    const ctx = context();
    const chatId = ctx.getCurrentChatId?.();
    const parent = ctx.chatMetadata?.main_chat;
    if (!chatId || typeof parent !== 'string' || !parent || parent === chatId || forked.has(chatId)) return;
    forked.add(chatId);
    const done = call('POST', chatPath(String(chatId), 'fork'), { body: { from: parent }, timeoutMs: 5000 })
        .catch(error => console.warn('[DLE Desktop bridge] could not carry the state over to a branch', error));
    waitForFork(done);
}

function listen() {
    const { eventSource, eventTypes } = context();
    const types = eventTypes ?? context().event_types;
    eventSource.on(types.CHAT_CHANGED, () => {
        chatChanged();
        forkIfBranch();
        hello();
    });
    eventSource.on(types.GENERATION_STOPPED, abortInflight);
    if (types.CHAT_DELETED) eventSource.on(types.CHAT_DELETED, name => forgetChat(name));
    if (types.GROUP_CHAT_DELETED) eventSource.on(types.GROUP_CHAT_DELETED, id => forgetChat(id));
}

/** DeepLore Enhanced itself (its external hook, dle-behaviour §3.11) injecting beside us doubles the lore. */
function warnIfDleIsActive() {
    if (state.dleChecked) return;
    state.dleChecked = true;
    if (typeof globalThis.deepLoreEnhanced_matchText !== 'function') return;
    state.dleAlsoActive = true;
    changed();
    globalThis.toastr?.warning('DeepLore Enhanced is also active, so both put lore into every prompt. '
        + 'Turn one of them off (Extensions → Manage extensions).', 'DLE Desktop bridge', { timeOut: 12000 });
}

async function start() {
    settings();
    await loadInstalledConfig();
    installVectorRouting();
    registerCommands();
    listen();
    installPrefetch();
    installSources();
    installWriters();
    installNotepad();
    installTrail();
    syncTools();
    mountPanel();
    // Extensions load one after another: look once they all had their turn.
    const { eventSource, eventTypes } = context();
    if (eventTypes?.APP_READY) eventSource.on(eventTypes.APP_READY, warnIfDleIsActive);
    setTimeout(warnIfDleIsActive, 10000); // should APP_READY have come and gone
    await hello();
    setInterval(() => {
        if (document.visibilityState === 'hidden') return;
        hello();
        refreshWritersPanel();
    }, HEARTBEAT_MS);
}

// Read-only handles for people (and the end-to-end tests) looking at the bridge from the console.
globalThis.dleDesktopBridge = {
    module: MODULE, state, placedKeys, routingStats, hello, ready: false, commands: commandNames,
    sources: { linked, show: showSources },
    tools: { sync: syncTools, registered: toolsRegistered, search: searchLore, flag: flagLore, injectedTitles, pending: pendingToolCalls },
    writers: { config: writersConfig, refresh: refreshWritersPanel },
};

start().then(() => { globalThis.dleDesktopBridge.ready = true; })
    .catch(error => console.error('[DLE Desktop bridge] failed to start', error));
