"""The Librarian (DLE's "Emma" session, dle-behaviour §5.4(b), §5.5): a chat with an AI librarian
that searches the vault through local tools, drafts entries in DLE's house style and writes them
through the note writer; gap records; Optimize Keys and Summarize. Qt-free."""
