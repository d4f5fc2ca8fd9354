"""Event feeds: the event log's consumers, change pages, subscriptions and their delivery."""
