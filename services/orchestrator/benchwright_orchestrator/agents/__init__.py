"""The platform's own agent (``agent: "benchwright"``): plain functions over ports.

``loop.run_agent`` is the attempt, ``tools`` the tools it offers its model,
``ports`` what it needs from the world, ``openai_model`` the model over the proxy.
"""
