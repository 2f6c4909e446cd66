// Slash commands with DeepLore Enhanced's names and aliases, so its users' habits carry over
// (dle-behaviour §5.12). Each returns text (for /pipe and scripts), toasts what went wrong in
// words and, where there is something to read, opens a popup. The work is in basics.js,
// steer.js, insight.js and palette.js; this file is the registry.

import { context } from './api.js';
import { contextNow, notebook, overrideCommand, refresh, status, why } from './basics.js';
import { analytics, browse, cacheInfo, graph, health, inspect, librarian, lint, simulate } from './insight.js';
import { palette } from './palette.js';
import {
    clearAllContext, clearField, clearFolder, contextState, pinsAndBlocks, setFieldCommand, setFolder, setNamedField,
} from './steer.js';
import { guarded } from './ui.js';
import { notepadCommand } from './notepad.js';
import { optimizeKeys, review, summarize } from './utilities.js';
import { newLore, reviewSuggestions, scribeHistory, scribeNow } from './writers.js';
import { importBook } from './worldinfo.js';

// arg: 'required' | 'optional' (absent: none). usage: how the argument is written.
const COMMANDS = [
    { name: 'dle', help: 'This list: every DLE Desktop command; click one to run it.', run: () => palette(COMMANDS) },
    { name: 'dle-why', help: 'Why did this lore reach the prompt? The decision record of the last generation.', run: why },
    { name: 'dle-context', help: 'What lore this chat gets right now (a dry run), its gating context, pins and blocks.', run: contextNow },
    { name: 'dle-inspect', aliases: ['dle-i'], help: 'The last generation\'s trace: entries, verdicts and stage timings.', run: inspect },
    { name: 'dle-status', help: 'DLE Desktop: connection, index, AI search, last error.', run: status },
    { name: 'dle-refresh', aliases: ['dle-r'], help: 'Re-read the whole vault in DLE Desktop now.', run: refresh },
    { name: 'dle-set-field', usage: '<field> [value]', arg: 'required', quotes: true, run: setFieldCommand,
        help: 'Set a gating field of this chat (a comma list for a multi-valued one); without a value, pick from the values the vault uses.' },
    { name: 'dle-clear-field', usage: '<field>', arg: 'required', run: clearField, help: 'Clear one gating field of this chat.' },
    { name: 'dle-set-era', aliases: ['dle-era'], usage: '[value]', arg: 'optional', run: setNamedField('era'), help: 'Set this chat\'s era (no value: pick one).' },
    { name: 'dle-set-location', aliases: ['dle-loc'], usage: '[value]', arg: 'optional', run: setNamedField('location'), help: 'Set this chat\'s location (no value: pick one).' },
    { name: 'dle-set-scene', usage: '[value]', arg: 'optional', run: setNamedField('scene_type'), help: 'Set this chat\'s scene type (no value: pick one).' },
    { name: 'dle-set-characters', usage: '<a, b>', arg: 'optional', run: setNamedField('character_present'), help: 'Set the characters present in this chat (no value: pick).' },
    { name: 'dle-context-state', aliases: ['dle-ctx'], run: contextState, help: 'This chat\'s gating context and folder filter, with the vault\'s fields.' },
    { name: 'dle-clear-all-context', aliases: ['dle-reset-context'], run: clearAllContext, help: 'Clear every gating field of this chat.' },
    { name: 'dle-set-folder', aliases: ['dle-folder'], usage: '[path …]', arg: 'optional', quotes: true, run: setFolder,
        help: 'Only entries in these folders reach this chat (quote paths with spaces); no path: pick from the vault\'s folders.' },
    { name: 'dle-clear-folder', run: clearFolder, help: 'Turn this chat\'s folder filter off.' },
    { name: 'dle-pins', run: pinsAndBlocks, help: 'The pins and blocks of this chat.' },
    { name: 'dle-pin', usage: '<entry title>', arg: 'required', run: overrideCommand('pins', true), help: 'Always inject an entry in this chat.' },
    { name: 'dle-unpin', usage: '<entry title>', arg: 'required', run: overrideCommand('pins', false), help: 'Undo /dle-pin.' },
    { name: 'dle-block', usage: '<entry title>', arg: 'required', run: overrideCommand('blocks', true), help: 'Never inject an entry in this chat.' },
    { name: 'dle-unblock', usage: '<entry title>', arg: 'required', run: overrideCommand('blocks', false), help: 'Undo /dle-block.' },
    { name: 'dle-notebook', usage: '[text]', arg: 'optional', run: notebook, help: 'Edit this chat\'s Author\'s Notebook (or set it to the text).' },
    { name: 'dle-analytics', run: analytics, help: 'How often each entry was matched and injected, here and in all chats; the entries never injected.' },
    { name: 'dle-simulate', run: simulate, help: 'Replay this chat message by message with keywords: what each one adds and drops.' },
    { name: 'dle-health', aliases: ['dle-h'], run: health, help: 'The vault\'s health check: errors, warnings, notes.' },
    { name: 'dle-lint', aliases: ['dle-l'], run: lint, help: 'Parser warnings and the notes the index skipped, with why.' },
    { name: 'dle-cache-info', usage: '[clear]', arg: 'optional', run: cacheInfo, help: 'Index and AI cache status; "clear" forgets this chat\'s cached AI answers.' },
    { name: 'dle-browse', aliases: ['dle-b'], usage: '[search]', arg: 'optional', run: browse, help: 'Search the vault\'s entries; pin or block one in this chat.' },
    { name: 'dle-graph', aliases: ['dle-g'], usage: '[entry title]', arg: 'optional', run: graph, help: 'Bring DLE Desktop\'s Graph view to the front.' },
    { name: 'dle-scribe', usage: '[focus]', arg: 'optional', run: scribeNow, help: 'Session Scribe: write a session note of this chat now (what to stress, optional).' },
    { name: 'dle-scribe-history', run: scribeHistory, help: 'This chat\'s session notes, newest first; each opens in DLE Desktop.' },
    { name: 'dle-newlore', aliases: ['dle-suggest'], run: newLore, help: 'Auto Lorebook now: propose the entries this chat mentions and the vault lacks, for review.' },
    { name: 'dle-suggestions', run: () => reviewSuggestions(), help: 'The lore suggestions waiting for this chat: accept, edit, reject.' },
    { name: 'dle-ai-notepad', usage: '[clear]', arg: 'optional', run: notepadCommand, help: 'This chat\'s AI Notepad (the model\'s private notes); "clear" empties it.' },
    { name: 'dle-summarize', run: summarize, help: 'Write summaries for the entries without one; review each in DLE Desktop.' },
    { name: 'dle-optimize-keys', usage: '<entry title>', arg: 'required', run: optimizeKeys, help: 'Propose better keys for an entry; review them in DLE Desktop.' },
    { name: 'dle-review', usage: '[question]', arg: 'optional', run: review, help: 'Ask the chat\'s model about the whole vault; only the question and the answer stay in the chat.' },
    { name: 'dle-import', usage: '[folder]', arg: 'optional', quotes: true, run: importBook,
        help: 'Import one of SillyTavern\'s World Info books into the vault (into the folder, if named): a preview first, then one Undo for all of it.' },
    { name: 'dle-librarian', usage: '[gap <id> | review | audit]', arg: 'optional', run: librarian, help: 'Bring DLE Desktop\'s Librarian to the front (at a gap, or in review or audit mode).' },
];

export function registerCommands() {
    const ctx = context();
    const { SlashCommandParser, SlashCommand, SlashCommandArgument, ARGUMENT_TYPE } = ctx;
    for (const command of COMMANDS) {
        const callback = (args, value) => guarded(command.name, () => command.run(args, value));
        const help = command.usage ? `${command.help} /${command.name} ${command.usage}` : command.help;
        if (SlashCommandParser?.addCommandObject && SlashCommand?.fromProps) {
            SlashCommandParser.addCommandObject(SlashCommand.fromProps({
                name: command.name,
                aliases: command.aliases ?? [],
                callback,
                returns: 'text',
                helpString: help,
                rawQuotes: !!command.quotes, // quoted folder paths reach us with their quotes, to be split right
                unnamedArgumentList: command.arg ? [SlashCommandArgument.fromProps({
                    description: command.usage ?? 'text',
                    typeList: [ARGUMENT_TYPE.STRING],
                    isRequired: false, // a missing one gets our message, which names what the vault has
                })] : [],
            }));
        } else {
            ctx.registerSlashCommand?.(command.name, callback, command.aliases ?? [], help, true, true);
        }
    }
}

/** Run a command as if typed without an argument (the panel's buttons); its text. */
export function runCommand(name) {
    const command = COMMANDS.find(c => c.name === name);
    return guarded(name, () => command.run({}, ''));
}

export const commandNames = COMMANDS.flatMap(c => [c.name, ...(c.aliases ?? [])]);
