-- Every column type with edge values (tests/binlog integration test and the
-- MariaDB file test). One statement per line block; run with the mariadb client
-- or statement by statement (split on ";\n").
CREATE DATABASE IF NOT EXISTS tbtest;
DROP TABLE IF EXISTS tbtest.alltypes;
CREATE TABLE tbtest.alltypes (
  id INT NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  yr YEAR, f FLOAT, d DOUBLE, dec65 DECIMAL(65,30), dec52 DECIMAL(5,2) UNSIGNED,
  dt DATE, t0 TIME, t6 TIME(6), t3 TIME(3),
  dt0 DATETIME, dt1 DATETIME(1), dt2 DATETIME(2), dt3 DATETIME(3), dt4 DATETIME(4), dt5 DATETIME(5), dt6 DATETIME(6),
  ts0 TIMESTAMP NULL DEFAULT NULL, ts3 TIMESTAMP(3) NULL DEFAULT NULL, ts6 TIMESTAMP(6) NULL DEFAULT NULL,
  c10 CHAR(10), vc VARCHAR(300), l1 VARCHAR(50) CHARACTER SET latin1, bin8 BINARY(8), vb VARBINARY(100),
  tx TEXT, mtx MEDIUMTEXT, bl BLOB, lbl LONGBLOB,
  b1 BIT(1), b12 BIT(12), b64 BIT(64),
  e ENUM('small','medium','large'),
  s SET('a','b','c','d','e','f','g','h','i','j','k','l','m','n','o','p','q','r','s','t','u','v','w','x','y','z','a1','b1','c1','d1','e1','f1','g1','h1','i1','j1','k1'),
  j JSON, g GEOMETRY, pt POINT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO tbtest.alltypes VALUES (1,
  -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615,
  1901, -1.5, 2.2250738585072014e-308, '-12345678901234567890123456789012345.123456789012345678901234567890', 999.99,
  '1000-01-01', '-838:59:59', '838:59:59.000000', '-25:00:00.500',
  '1000-01-01 00:00:00', '2024-02-29 23:59:59.9', '2024-02-29 23:59:59.99', '2024-02-29 23:59:59.999',
  '2024-02-29 23:59:59.9999', '2024-02-29 23:59:59.99999', '9999-12-31 23:59:59.999999',
  '1970-01-01 00:00:01', '2038-01-19 03:14:07.999', '2001-09-09 01:46:40.123456',
  'abc', 'emoji 😀 ünïcödé', CONCAT('caf', _latin1 X'E9'), X'0001020300000000', X'00FF7F80',
  'text', REPEAT('m', 70000), X'DEADBEEF', REPEAT(X'AB', 70000),
  b'1', b'101010101010', b'1111111111111111111111111111111111111111111111111111111111111111',
  'large', 'a,c,z,k1',
  JSON_OBJECT('k', REPEAT('x', 70000), 'n', 1.5, 'arr', JSON_ARRAY(1, 'two', NULL, TRUE), 'big', 18446744073709551615),
  ST_GeomFromText('LINESTRING(0 0,1 1,2 2)', 4326), POINT(1.5, -2.5));
INSERT INTO tbtest.alltypes (id) VALUES (2);
INSERT INTO tbtest.alltypes (id, ti, dt, dt0, yr, e, s, vc, j) VALUES (3, 127, '0000-00-00', '0000-00-00 00:00:00', 0, 'small', '', '', '[]');
BEGIN;
UPDATE tbtest.alltypes SET ti = ti - 1, vc = 'changed', l1 = CONCAT('na', _latin1 X'EF', 've') WHERE id = 3;
DELETE FROM tbtest.alltypes WHERE id = 2;
INSERT INTO tbtest.alltypes (id, biu, dec65) VALUES (4, 0, 0);
COMMIT;
