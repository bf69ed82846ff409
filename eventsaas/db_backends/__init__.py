"""Django database backends of our own: the stock ones with one behaviour changed each (see each module)."""
