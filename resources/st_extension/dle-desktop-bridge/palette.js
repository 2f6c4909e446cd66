// /dle: every bridge command with its one-line help. A click runs a command that needs no
// argument, or puts one that does into SillyTavern's input box, ready to finish typing.

import { escapeHtml } from './api.js';
import { guarded, popup, toast } from './ui.js';

let listed = [];

function closePalette(node) {
    const dialog = node.closest('dialog');
    const close = dialog?.querySelector('.popup-button-ok, .popup-button-close') ?? document.querySelector('#dialogue_popup_ok');
    close?.click();
}

document.addEventListener('click', event => {
    const item = event.target?.closest?.('.dle-desktop-bridge-palette-item');
    if (!item) return;
    const command = listed.find(c => c.name === item.dataset.command);
    if (!command) return;
    closePalette(item);
    if (command.arg === 'required') {
        const box = document.getElementById('send_textarea');
        if (box) {
            box.value = `/${command.name} `;
            box.dispatchEvent(new Event('input', { bubbles: true }));
            box.focus();
        }
        toast('info', `/${command.name}: finish the command in the input box and send it.`);
        return;
    }
    guarded(command.name, () => command.run({}, ''));
});

export function palette(commands) {
    listed = commands;
    const rows = commands.map(c => {
        const aliases = c.aliases?.length ? ` <small>(${c.aliases.map(a => `/${escapeHtml(a)}`).join(', ')})</small>` : '';
        const usage = c.usage ? ` <code>${escapeHtml(c.usage)}</code>` : '';
        return `<li><button type="button" class="menu_button dle-desktop-bridge-palette-item" data-command="${escapeHtml(c.name)}">`
            + `/${escapeHtml(c.name)}</button>${usage}${aliases} ${escapeHtml(c.help)}</li>`;
    }).join('');
    popup(`<h3>DLE Desktop commands</h3><p>Click one to run it (one that needs an argument goes into the input box).</p>`
        + `<ul class="dle-desktop-bridge-palette">${rows}</ul>`);
    return commands.map(c => `/${c.name}${c.usage ? ` ${c.usage}` : ''}: ${c.help}`).join('\n');
}
