"""The Jobs API's own parts: its wire shapes, its durable store, its scheduler and the service behind the routes."""
