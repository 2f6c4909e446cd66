// A throwaway proof for the end-to-end suite (tests/e2e/sillytavern/): an extension shipped in this repository,
// copied into a SillyTavern data folder, can put text into the prompt the model receives. The real
// bridge will live beside it (st_extension/<bridge>/); nothing here is meant for users.
//
// Where the text goes comes from extension_settings.dle_proof (seeded into settings.json by the
// test, the way the app's installer will write the bridge's server URL and token), so one build of
// this file proves every position, depth and role.

const SETTINGS_KEY = 'dle_proof';
const DEFAULTS = Object.freeze({
    marker: 'DLE-PROOF-MARKER',
    position: 1, // extension_prompt_types.IN_CHAT (the numbers are the same on 1.12 and 1.19)
    depth: 0,
    role: 0, // extension_prompt_roles.SYSTEM
});

function placement() {
    const { extensionSettings } = SillyTavern.getContext();
    return { ...DEFAULTS, ...(extensionSettings[SETTINGS_KEY] ?? {}) };
}

// SillyTavern calls the manifest's generate_interceptor by name on globalThis before it builds
// the prompt, with the chat it is about to send.
globalThis.dleProofInterceptor = async function (chat, _contextSize, _abort, type) {
    const { setExtensionPrompt } = SillyTavern.getContext();
    const where = placement();
    const lastUser = [...chat].reverse().find(message => message.is_user)?.mes ?? '';
    // The last user message is echoed so the test can tell this generation's text from a stale one.
    const text = `${where.marker} [seen: ${lastUser}]`;
    setExtensionPrompt(SETTINGS_KEY, text, where.position, where.depth, false, where.role);
    globalThis.dleProof.calls.push({ type: type ?? null, text });
};

globalThis.dleProof = { loaded: true, calls: [] };
