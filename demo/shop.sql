-- The bundled demo database: a small shop. scripts/demo creates it in WAL mode.
PRAGMA journal_mode=WAL;
CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT, city TEXT);
CREATE TABLE products(sku TEXT PRIMARY KEY, title TEXT NOT NULL, price REAL NOT NULL, stock INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, sku TEXT NOT NULL, qty INTEGER NOT NULL, note BLOB);
BEGIN;
INSERT INTO customers VALUES (1,'Ada Lovelace','ada@example.org','London'),
                             (2,'Grace Hopper','grace@example.org','Arlington'),
                             (3,'Edsger Dijkstra',NULL,'Nuenen');
INSERT INTO products VALUES ('tea-01','Assam tea, 250 g',6.5,40),('mug-02','Mug ☕',12.0,15),
                            ('pen-03','Fountain pen',24.99,7);
INSERT INTO orders VALUES (1,1,'tea-01',2,NULL),(2,2,'mug-02',1,x'cafe');
COMMIT;
