"""The public functions as a script calls them (``kvplan.capacity``, ``kvplan.kv_cache``, ...): every keyword of
the matching command, typed, with its default, under the CLI's names and in the CLI's value forms.

``kvplan.api.keywords`` reads the keywords, ``kvplan.api.request`` turns them into the library's question,
``kvplan.api.planning`` and ``kvplan.api.workflows`` are the functions.
"""
