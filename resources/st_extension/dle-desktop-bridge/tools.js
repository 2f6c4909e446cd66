// Lore tools: with "lore_tools" on, the chat model may call two function tools through
// SillyTavern's ToolManager (function calling, chat completion): search DLE Desktop's vault for
// lore it is missing mid-reply, and flag what the vault lacks or has wrong. Searches that find
// nothing and flags become gap records for the Librarian in DLE Desktop (dle-behaviour §5.4 (a)).
// Whatever goes wrong (DLE Desktop down, a refusal, a bad argument) comes back to the model as a
// short text: nothing is thrown into SillyTavern.

import { call, context, settings } from './api.js';
import { state } from './status.js';
import { recordToolCall } from './trail.js';

export const SEARCH_TOOL = 'dle_search_lore';
export const FLAG_TOOL = 'dle_flag_lore';
const MAX_QUERIES = 4;
const MAX_QUERY_CHARS = 500;
const MAX_TITLE_CHARS = 500;
const MAX_REASON_CHARS = 4000;
const URGENCIES = ['low', 'medium', 'high'];
const FLAG_TYPES = ['gap', 'update'];
const TIMEOUT_MS = 15000;

let registered = false;

function wanted() {
    const s = settings();
    return s.enabled !== false && s.lore_tools === true;
}

function clip(value, limit) {
    return typeof value === 'string' ? value.trim().slice(0, limit) : '';
}

/** The titles this generation's lore already holds: the model need not search for them. */
export function injectedTitles() {
    const ctx = context();
    const chatId = String(ctx.getCurrentChatId?.() ?? ctx.chatId ?? '');
    const last = state.last;
    if (!last || !chatId || last.chatId !== chatId) return [];
    const titles = (last.result?.injected ?? []).map(i => i?.title).filter(t => typeof t === 'string' && t);
    return [...new Set(titles)].slice(0, 2000).map(t => t.slice(0, MAX_TITLE_CHARS));
}

function queriesOf(args) {
    let raw = args?.queries;
    if (typeof raw === 'string') raw = [raw];
    if (!Array.isArray(raw) && typeof args?.query === 'string') raw = [args.query];
    if (!Array.isArray(raw)) return [];
    return raw.map(q => clip(q, MAX_QUERY_CHARS)).filter(Boolean).slice(0, MAX_QUERIES);
}

function quoted(items) {
    return items.map(q => `"${q}"`).join(', ');
}

function failure(what, error) {
    const why = String(error?.message || error || 'unknown error').slice(0, 300);
    return `The lore vault could not be ${what} (${why}). Go on without it.`;
}

export async function searchLore(args) {
    try {
        const queries = queriesOf(args);
        if (!queries.length) return 'Give 1 to 4 search queries (short phrases naming what to look up).';
        const body = { queries, exclude_titles: injectedTitles() };
        const reason = clip(args?.reason, MAX_REASON_CHARS);
        if (reason) body.reason = reason;
        let answer;
        try {
            answer = await call('POST', '/api/dle/v1/lore/search', { body, timeoutMs: TIMEOUT_MS });
        } catch (error) {
            recordToolCall({ tool: 'search', queries, error: String(error?.message || error).slice(0, 300) });
            throw error;
        }
        recordToolCall({
            tool: 'search',
            queries,
            found: answer?.best?.title ?? '',
            linked: (answer?.linked ?? []).map(l => l?.title).filter(Boolean).slice(0, 5),
            misses: (answer?.misses ?? []).filter(m => typeof m === 'string' && m),
        });
        const parts = [];
        if (answer?.best?.content) {
            parts.push(`From the lore vault:\n\n${answer.best.content}`);
            const linked = (answer.linked ?? []).map(l => l?.manifest || l?.title).filter(Boolean);
            if (linked.length) parts.push(`Linked entries (search for one by title to read it):\n${linked.join('\n')}`);
        }
        const misses = (answer?.misses ?? []).filter(m => typeof m === 'string' && m);
        if (misses.length) {
            parts.push(`Nothing in the vault about ${quoted(misses)}; noted as a gap for the Librarian.`);
        }
        if (!parts.length) parts.push(`Nothing in the vault about ${quoted(queries)} beyond the lore already in the prompt.`);
        return parts.join('\n\n');
    } catch (error) {
        return failure('searched', error);
    }
}

export async function flagLore(args) {
    try {
        const title = clip(args?.title, MAX_TITLE_CHARS);
        if (!title) return 'Give the title of the missing or outdated lore to flag it.';
        const flagType = FLAG_TYPES.includes(args?.flag_type) ? args.flag_type : 'gap';
        const body = {
            title,
            reason: clip(args?.reason, MAX_REASON_CHARS),
            urgency: URGENCIES.includes(args?.urgency) ? args.urgency : 'medium',
            flag_type: flagType,
        };
        const entry = clip(args?.entry_title, MAX_TITLE_CHARS);
        if (entry) body.entry_title = entry;
        let gap;
        try {
            gap = await call('POST', '/api/dle/v1/lore/flag', { body, timeoutMs: TIMEOUT_MS });
        } catch (error) {
            recordToolCall({ tool: 'flag', ...body, error: String(error?.message || error).slice(0, 300) });
            throw error;
        }
        recordToolCall({ tool: 'flag', ...body, urgency: gap?.urgency || body.urgency });
        const what = flagType === 'update' ? `an update to "${entry || title}"` : `"${title}" as missing lore`;
        const times = Number(gap?.frequency) > 1 ? `, asked for ${gap.frequency} times` : '';
        return `Flagged ${what} for the Librarian (${gap?.urgency || body.urgency} urgency${times}).`;
    } catch (error) {
        return failure('flagged', error);
    }
}

const TOOLS = [
    {
        name: SEARCH_TOOL,
        displayName: 'Search the lore vault (DLE Desktop)',
        description: 'Search the story\'s lore vault for facts you need and do not have: a place, person, item, '
            + 'faction or event named in the chat. The lore already in the prompt need not be searched. '
            + 'Returns the best matching entry in full and related entries; what is not found is noted '
            + 'as missing lore.',
        parameters: {
            $schema: 'http://json-schema.org/draft-04/schema#',
            type: 'object',
            properties: {
                queries: {
                    type: 'array',
                    items: { type: 'string' },
                    minItems: 1,
                    maxItems: MAX_QUERIES,
                    description: '1 to 4 short search phrases, e.g. names or topics',
                },
                reason: { type: 'string', description: 'Why this lore is needed for the reply' },
            },
            required: ['queries'],
        },
        action: searchLore,
        formatMessage: args => `Searching the lore vault${queriesOf(args).length ? `: ${queriesOf(args).join(', ')}` : ''}`,
    },
    {
        name: FLAG_TOOL,
        displayName: 'Flag missing lore (DLE Desktop)',
        description: 'Flag lore the vault lacks (flag_type "gap") or an entry the story has made outdated '
            + '(flag_type "update", with entry_title), so the author\'s librarian can write it.',
        parameters: {
            $schema: 'http://json-schema.org/draft-04/schema#',
            type: 'object',
            properties: {
                title: { type: 'string', description: 'What the missing or outdated lore is about' },
                reason: { type: 'string', description: 'What in the story needs it' },
                urgency: { type: 'string', enum: URGENCIES, description: 'How much the story needs it' },
                flag_type: { type: 'string', enum: FLAG_TYPES, description: 'gap: missing; update: an entry is outdated' },
                entry_title: { type: 'string', description: 'For an update: the title of the entry to update' },
            },
            required: ['title', 'reason'],
        },
        action: flagLore,
        formatMessage: args => `Flagging lore for the Librarian${clip(args?.title, 80) ? `: ${clip(args.title, 80)}` : ''}`,
    },
];

/** Whether this SillyTavern has function tools for extensions (1.12.6 and later). */
export function toolsAvailable() {
    const ctx = context();
    return typeof ctx.registerFunctionTool === 'function' && typeof ctx.unregisterFunctionTool === 'function';
}

/** What SillyTavern itself needs for the tools to be offered to the model, in words (null: all set). */
export function toolsBlocker() {
    const ctx = context();
    if (!toolsAvailable()) return 'this SillyTavern has no function tools for extensions (update it)';
    if (ctx.mainApi !== undefined && ctx.mainApi !== 'openai') return 'function calling needs the Chat Completion API';
    if (!ctx.chatCompletionSettings?.function_calling) return 'turn on "Enable function calling" in AI Response Configuration';
    if (typeof ctx.isToolCallingSupported === 'function' && !ctx.isToolCallingSupported()) {
        return 'the chat completion source or model does not support function calling';
    }
    return null;
}

export function toolsRegistered() {
    return registered;
}

/** Register or unregister the tools to match the settings; safe to call any time. */
export function syncTools() {
    if (!toolsAvailable()) return false;
    const ctx = context();
    try {
        if (wanted() && !registered) {
            for (const tool of TOOLS) ctx.registerFunctionTool({ ...tool, shouldRegister: () => wanted() });
            registered = true;
        } else if (!wanted() && registered) {
            for (const tool of TOOLS) ctx.unregisterFunctionTool(tool.name);
            registered = false;
        }
    } catch (error) {
        console.warn('[DLE Desktop bridge] could not change the lore tools', error);
    }
    return registered;
}
