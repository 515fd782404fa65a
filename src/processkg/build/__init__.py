"""The build: sources to a store (:mod:`processkg.build.pipeline`, ``kg build``) and the audit that
checks a built store against its sources (:mod:`processkg.build.audit`, ``kg audit``).

The only stage that imports several others to run them in order: discover the sources, read,
lift, write the store with its payload shapes and search index, then count what the sources
hold against what the graph holds.
"""
