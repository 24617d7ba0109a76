-- Changes scripts/demo applies while `tributary run` is capturing, one transaction each.
BEGIN; INSERT INTO orders VALUES (3,3,'pen-03',1,NULL); UPDATE products SET stock=stock-1 WHERE sku='pen-03'; COMMIT;
UPDATE customers SET email='edsger@example.org' WHERE id=3;
BEGIN; DELETE FROM orders WHERE id=2; UPDATE products SET stock=stock+1 WHERE sku='mug-02'; COMMIT;
UPDATE products SET sku='tea-01b', title='Assam tea, 500 g', price=11.0 WHERE sku='tea-01';
INSERT INTO customers VALUES (4,'Barbara Liskov','barbara@example.org','Boston');
-- the last change: scripts/demo waits until the cache holds this row
INSERT INTO orders VALUES (4,4,'tea-01b',3,CAST('gift' AS BLOB));
