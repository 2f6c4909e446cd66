"""The writers at the table (Session Scribe, Auto Lorebook, AI Notepad) as pure text functions:
their prompts, the messages they send, what they make of the model's answers, and the notes they
write. No I/O; the services in dle_desktop/writers/ call the AI and the note writer."""
