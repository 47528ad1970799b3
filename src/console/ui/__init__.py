"""The Textual UI: a thin layer over the headless core (fleet, jobs, jobspec, costs).

`app.ConsoleApp` composes the panes in `widgets/` (one widget per file) and the modal forms in
`screens/`; every blocking HfApi call runs in a thread worker and comes back as a message.
"""
