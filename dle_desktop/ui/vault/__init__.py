"""The Vault view: the entries table, an entry's detail, the health check, Test a chat."""
