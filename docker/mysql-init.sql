-- Run once by the mysql image at first start (docker-compose.yml).
-- The tributary user: reads the binlog as a replica and snapshots tables
-- (BACKUP_ADMIN for LOCK INSTANCE FOR BACKUP, RELOAD for FLUSH TABLES WITH READ LOCK).
CREATE USER IF NOT EXISTS 'tributary'@'%' IDENTIFIED BY 'tributary';
GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT, BACKUP_ADMIN ON *.* TO 'tributary'@'%';

-- A small sample database to watch.
CREATE DATABASE IF NOT EXISTS shop CHARACTER SET utf8mb4;
CREATE TABLE shop.customers (
  id INT AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(100) NOT NULL,
  created_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
);
CREATE TABLE shop.orders (
  id BIGINT AUTO_INCREMENT PRIMARY KEY,
  customer_id INT NOT NULL,
  total DECIMAL(10,2) NOT NULL,
  status ENUM('new','paid','shipped') NOT NULL DEFAULT 'new'
);
INSERT INTO shop.customers (name) VALUES ('Grace'), ('Edsger');
INSERT INTO shop.orders (customer_id, total, status) VALUES (1, 12.50, 'paid'), (2, 7.00, 'new');
