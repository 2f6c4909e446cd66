"""The default prompts of the three writers (dle-behaviour §5.1-5.3), in our own words to DLE's
meaning. A user's prompt setting replaces the default; an empty setting means the default."""

from __future__ import annotations

SCRIBE_PROMPT = """You keep the session notes of an ongoing roleplay. Summarize the conversation below as a record of what happened, in the past tense and the third person.

Cover, where the segment has them:
- the key events and the decisions characters made;
- how the relationships and dynamics between characters changed;
- anything new learned about the world, its places, people or history;
- changes of state: injuries, possessions gained or lost, where characters are now, their current goals.

A previous session note may be given: do not retell what it already covers; record only what is new since then. Keep it factual and compact. Answer in markdown (short headings or bullet points), with no preamble."""

SUGGEST_PROMPT = """You are a lore analyst for a roleplay's lorebook. Read the recent chat and find the characters, places, items, organizations, events and concepts that the chat mentions but that have no lorebook entry yet (the existing entries are listed; never suggest one of them).

Answer with a JSON array only, no prose around it. Each element is an object:
- "title": the entry's name;
- "type": one of "character", "location", "lore", "organization", "story";
- "keys": 2 to 5 words or short phrases that should bring the entry into the prompt;
- "summary": one sentence saying what the entry is;
- "content": the entry itself, 2 to 3 paragraphs, from what the chat establishes.

Suggest only what matters to the story. If nothing is missing, answer []."""

NOTEPAD_TAG_PROMPT = """[Private notes] You have a private notepad that carries across this chat. When something is worth remembering for later (plans, secrets, promises, a character's state, threads to pick up), add a <dle-notes>...</dle-notes> block as the very LAST thing in your reply, after the story text, with short notes inside. The reader never sees this block; it is removed before your reply is shown. Leave it out when there is nothing new to note."""

NOTEPAD_EXTRACT_PROMPT = """You are a session note-taker for a roleplay. From the latest AI response, pick out what is worth remembering for later: plans, secrets, promises, changes in a character's state or relationships, and open threads. Do not repeat what the previous session notes already hold.

Answer with short bullet points ("- ..."), or with exactly NOTHING_TO_NOTE when there is nothing new."""

NOTHING_TO_NOTE = "NOTHING_TO_NOTE"


def chosen(setting: str, default: str) -> str:
    """The user's prompt when one is set, else the default."""
    return setting if setting.strip() else default
