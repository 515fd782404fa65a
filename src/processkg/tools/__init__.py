"""One tool layer, two faces: the tools an agent uses on a store (find entity sets, describe one,
its next steps, validate a call, send it), written once and offered by ``kg mcp`` (a Model Context
Protocol server) and ``kg agent`` (a ReAct loop over an OpenAI-compatible chat endpoint).

:mod:`specs` holds the tool list (names, JSON schemas, annotations), :mod:`toolbox` what each tool
answers, :mod:`odata_client` the HTTP side of ``call``, :mod:`local_server` an in-process
``kg serve`` for ``call`` to talk to, and :mod:`mcp_server` the MCP face.
"""
