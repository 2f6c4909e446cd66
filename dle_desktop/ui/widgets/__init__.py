"""Small widgets and helpers shared by the views."""
