"""`make demo`: ralph construct on an example spec, in a throwaway git repository, driven by a
scripted agent (ralph.demo.agent), so it runs without any model account."""
