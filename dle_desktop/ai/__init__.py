"""AI providers: connection profiles and one adapter per chat wire format, behind one async client."""
