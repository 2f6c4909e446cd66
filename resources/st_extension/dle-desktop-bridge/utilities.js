// DLE's AI utilities from the chat (dle-behaviour §5.5). /dle-summarize and /dle-optimize-keys run
// the app's own Summarize and Optimize Keys: each proposed change waits in DLE Desktop's window
// for review, as it does when started there. /dle-review asks the chat's model about the whole
// vault: the dump goes as a quiet prompt, so only the question and the answer stay in the chat
// (DLE posts the dump as a visible message, which then rides along in every later prompt).

import { BridgeError, call, context } from './api.js';
import { clearPlaced } from './inject.js';
import { contextSize } from './sources.js';
import { argText, currentChatId, toast } from './ui.js';

const REVIEW_TIMEOUT_MS = 30_000;

async function showInApp(body, doing) {
    await call('POST', '/api/dle/v1/app/show', { body, timeoutMs: 10_000 });
    toast('info', doing, { timeOut: 6000 });
    return doing;
}

/** /dle-summarize: summaries for the entries without one, each reviewed in the app. */
export function summarize() {
    return showInApp({ view: 'librarian', mode: 'summarize' },
        'DLE Desktop is writing summaries for the entries that lack one; review each proposal in its window.');
}

/** /dle-optimize-keys <entry>: better keys for one entry, reviewed in the app. */
export function optimizeKeys(_args, value) {
    const title = argText(value);
    if (!title) throw new BridgeError('Name the entry: /dle-optimize-keys <entry title> (/dle-browse lists them).');
    return showInApp({ view: 'librarian', mode: 'optimize-keys', entry: title },
        `DLE Desktop is proposing keys for “${title}”; review the proposal in its window.`);
}

function newMessage(ctx, isUser, text, extra = {}) {
    return {
        name: isUser ? ctx.name1 : ctx.name2,
        is_user: isUser,
        is_system: false,
        send_date: new Date().toISOString(),
        mes: text,
        extra: { ...extra },
    };
}

async function post(ctx, message) {
    ctx.chat.push(message);
    ctx.addOneMessage(message);
    await ctx.saveChat?.();
}

async function quietAnswer(ctx, prompt, responseLength) {
    const generate = ctx.generateQuietPrompt;
    if (typeof generate !== 'function') throw new BridgeError('This SillyTavern cannot send a quiet prompt (update it).');
    const length = responseLength > 0 ? responseLength : null;
    // 1.13+ takes one options object; 1.12 takes positional arguments (skipWIAN: the whole vault is in it).
    return generate.length === 0
        ? generate({ quietPrompt: prompt, skipWIAN: true, responseLength: length })
        : generate(prompt, false, true, null, null, length);
}

/** /dle-review [question]: the whole vault reviewed by the chat's model. */
export async function review(_args, value) {
    currentChatId();
    const ctx = context();
    const question = argText(value);
    const size = contextSize();
    const built = await call('POST', '/api/dle/v1/review', {
        body: { question, context_tokens: size > 0 ? size : undefined }, timeoutMs: REVIEW_TIMEOUT_MS,
    });
    if (!built.fits) {
        throw new BridgeError(`The vault is about ${built.tokens} tokens (${built.entries} entries); this model's context holds `
            + `${size}. Raise the context size, or ask about part of the vault with /dle-librarian.`);
    }
    toast('info', `Reviewing ${built.entries} entries (~${built.tokens} tokens)…`, { timeOut: 5000 });
    await post(ctx, newMessage(ctx, true, built.question, { dle_review: true }));
    clearPlaced(); // the whole vault is in the prompt: no lore group beside it
    const answer = String(await quietAnswer(ctx, built.prompt, built.response_tokens) ?? '').trim();
    if (!answer) throw new BridgeError('The model answered nothing to the review.');
    await post(ctx, newMessage(ctx, false, answer, { dle_review: true }));
    return answer;
}
