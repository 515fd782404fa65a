"""``kg agent``: a ReAct agent over any OpenAI-compatible chat endpoint with tool calling, given the
tools of one evaluation condition (:mod:`conditions`: typed, chunkrag, chunkrag-vh), writing a
trace of every run (:mod:`loop`) beside the OData server's recording (:mod:`run`)."""
