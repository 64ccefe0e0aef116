"""Rio's look and small widgets shared by every room: theme, fonts, icons, tooltips, dialogs."""
