"""Built-in scorers: standalone task_impl.py sources, read as text and never imported."""
