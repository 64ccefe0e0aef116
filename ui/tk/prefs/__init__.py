"""Preferences: the Preferences dialog, Edit → AI Preferences…, model providers and API keys."""
