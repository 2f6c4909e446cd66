"""The Librarian view: sessions, chat, drafts and gaps."""
